package git

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	muster "github.com/muster-run/muster"
)

// Attacks an agent can make on muster's git work, each with real git.

// evilConfig is config that makes git run marker programs: fsmonitor, a
// clean/smudge filter, a merge driver, a diff driver and textconv, and
// hooks.
func evilConfig(marker, hooks string) string {
	prog := fmt.Sprintf("sh -c 'echo ran >>%s; cat'", marker)
	return fmt.Sprintf(`[core]
	fsmonitor = "sh -c 'echo fsmonitor >>%[1]s'"
	hooksPath = %[3]s
	attributesFile = %[4]s
[filter "evil"]
	clean = "%[2]s"
	smudge = "%[2]s"
	process = "%[2]s"
	required = true
[merge "evil"]
	driver = "sh -c 'echo merge >>%[1]s; echo EVIL >%%A'"
[diff "evil"]
	command = "sh -c 'echo diff >>%[1]s'"
	textconv = "sh -c 'echo textconv >>%[1]s; cat'"
[diff]
	external = "sh -c 'echo external >>%[1]s'"
`, marker, strings.ReplaceAll(prog, `'`, `'`), hooks, filepath.Join(filepath.Dir(marker), "attributes"))
}

// plantHooks writes every hook muster's calls could trigger into dir.
func plantHooks(t *testing.T, dir, marker string) {
	t.Helper()
	for _, h := range []string{"pre-commit", "post-commit", "post-checkout", "reference-transaction", "post-index-change", "post-merge", "pre-auto-gc", "post-rewrite"} {
		write(t, dir, h, fmt.Sprintf("#!/bin/sh\necho hook %s >>%s\n", h, marker))
		os.Chmod(filepath.Join(dir, h), 0o755)
	}
}

func TestMusterRunsNothingAnAgentConfigures(t *testing.T) {
	lines := make([]string, 20)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i)
	}
	orig := strings.Join(lines, "\n") + "\n"
	repo := newRepo(t, map[string]string{"f.txt": orig, "README.md": "r\n"})
	evil := t.TempDir()
	marker := filepath.Join(evil, "ran")
	hooks := filepath.Join(evil, "hooks")
	plantHooks(t, hooks, marker)
	write(t, evil, "attributes", "* filter=evil merge=evil diff=evil\n")
	w := open(t, repo, "r1")
	// With confinement off an agent can also reach the user's
	// repository: the same config and attributes there.
	userCfg := filepath.Join(repo, ".git", "config")
	cfg, _ := os.ReadFile(userCfg)
	os.WriteFile(userCfg, append(cfg, []byte(evilConfig(marker, hooks))...), 0o644)
	write(t, repo, ".git/info/attributes", "* filter=evil merge=evil diff=evil\n")
	plantHooks(t, filepath.Join(repo, ".git", "hooks"), marker)

	edit := func(slot string, line int) (dir, base string) {
		dir, base, err := w.Prepare(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		// The agent configures its clone's git.
		gd := filepath.Join(dir, ".git")
		c, _ := os.ReadFile(filepath.Join(gd, "config"))
		os.WriteFile(filepath.Join(gd, "config"), append(c, []byte(evilConfig(marker, hooks))...), 0o644)
		write(t, gd, "info/attributes", "* filter=evil merge=evil diff=evil\n")
		plantHooks(t, filepath.Join(gd, "hooks"), marker)
		write(t, dir, ".gitattributes", "* filter=evil merge=evil diff=evil\n")
		l := append([]string(nil), lines...)
		l[line] = "edited by " + slot
		write(t, dir, "f.txt", strings.Join(l, "\n")+"\n")
		return dir, base
	}
	// Two tasks edit different lines of one file on the same base: the
	// second integrates with a three-way content merge (merge-tree).
	d1, b1 := edit("a#1", 2)
	d2, b2 := edit("b#1", 15)
	var commits []string
	for _, tc := range []struct{ dir, base string }{{d1, b1}, {d2, b2}} {
		ch, err := w.Change(ctx, tc.dir, tc.base)
		if err != nil {
			t.Fatal(err)
		}
		if render(ch) != "A .gitattributes; M f.txt" {
			t.Errorf("change %s", render(ch))
		}
		if _, err := w.Diff(ctx, tc.dir, tc.base); err != nil {
			t.Fatal(err)
		}
		c, err := w.Commit(ctx, tc.dir, tc.base, muster.CommitInfo{Run: "r1", Task: muster.TaskID(filepath.Base(tc.dir))})
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, c)
	}
	if _, conf, err := w.Integrate(ctx, commits[0], b1); err != nil || len(conf) > 0 {
		t.Fatal(conf, err)
	}
	tip, conf, err := w.Integrate(ctx, commits[1], b2)
	if err != nil || len(conf) > 0 {
		t.Fatal(conf, err)
	}
	// Reuse both clones once more (resets through the agents' config).
	for _, s := range []string{"a#1", "b#1"} {
		if _, _, err := w.Prepare(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(marker); err == nil {
		t.Errorf("muster ran programs the config names:\n%s", b)
	}
	// Both edits landed, untouched by any filter or merge driver.
	got := g(t, repo, "show", tip+":f.txt")
	if !strings.Contains(got, "edited by a#1") || !strings.Contains(got, "edited by b#1") || strings.Contains(got, "EVIL") || strings.Contains(got, "ran") {
		t.Errorf("merged file:\n%s", got)
	}
	// The clones' git directories are muster's again: no hooks, none of
	// the agent's config.
	for _, d := range []string{d1, d2} {
		if b, _ := os.ReadFile(filepath.Join(d, ".git", "config")); strings.Contains(string(b), "evil") || strings.Contains(string(b), "fsmonitor") {
			t.Errorf("clone config kept the agent's lines:\n%s", b)
		}
		if _, err := os.Stat(filepath.Join(d, ".git", "hooks")); err == nil {
			t.Error("clone hooks kept")
		}
		if _, err := os.Stat(filepath.Join(d, ".git", "info", "attributes")); err == nil {
			t.Error("clone info/attributes kept")
		}
	}
}

// An agent's refs, config, gc and objects act on its own clone: another
// clone's pending commit and the user's repository are unaffected.
func TestAgentGitStaysInItsClone(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	before := userSnapshot(t, repo)
	refsBefore := g(t, repo, "for-each-ref", "--format=%(refname) %(objectname)")
	d1, b1, _ := w.Prepare(ctx, "a#1")
	d2, b2, _ := w.Prepare(ctx, "b#1")
	// Clone b has a change muster staged but did not commit yet.
	write(t, d2, "pending.txt", "pending\n")
	if _, err := w.Change(ctx, d2, b2); err != nil {
		t.Fatal(err)
	}
	// Agent a commits, branches, tags, rewrites its config and collects
	// garbage as hard as it can.
	write(t, d1, "mine.txt", "mine\n")
	g(t, d1, "add", "mine.txt")
	g(t, d1, "commit", "-qm", "agent commit")
	g(t, d1, "branch", "-f", "main", "HEAD")
	g(t, d1, "tag", "v9")
	g(t, d1, "config", "core.worktree", repo)
	g(t, d1, "reflog", "expire", "--expire=now", "--all")
	g(t, d1, "gc", "--prune=now", "-q")
	g(t, d1, "update-ref", "-d", "HEAD")
	if after := userSnapshot(t, repo); after != before {
		t.Errorf("user's repository changed:\n%s\n%s", before, after)
	}
	if refs := g(t, repo, "for-each-ref", "--format=%(refname) %(objectname)"); refs != refsBefore {
		t.Errorf("user's refs changed:\n%s\n%s", refsBefore, refs)
	}
	// b's pending commit still works, and integrates.
	c, err := w.Commit(ctx, d2, b2, muster.CommitInfo{Run: "r1", Task: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, conf, err := w.Integrate(ctx, c, b2); err != nil || len(conf) > 0 {
		t.Fatal(conf, err)
	}
	// a's change is still its work tree, and its clone comes back.
	ch, err := w.Change(ctx, d1, b1)
	if err != nil || render(ch) != "A mine.txt" {
		t.Errorf("change of a: %s %v", render(ch), err)
	}
	if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
		t.Fatal(err)
	}
	if st := g(t, d1, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("clone a after Prepare:\n%s", st)
	}
	if out, err := gitOut(repo, "fsck", "--connectivity-only", "--no-progress", "--no-dangling"); err != nil {
		t.Errorf("fsck: %v\n%s", err, out)
	}
}

// The hard-link attack: a write through a second name of a file reaches
// it without an event on its own path.
func TestHardLinkWriteIsSeen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent func(dir string)
	}{
		{"link in an ignored directory", func(dir string) {
			os.MkdirAll(filepath.Join(dir, "ignored"), 0o755)
			os.Link(filepath.Join(dir, "src", "a.go"), filepath.Join(dir, "ignored", "hl"))
			appendFile(filepath.Join(dir, "ignored", "hl"), "x\n")
		}},
		{"link written through, then removed", func(dir string) {
			os.Link(filepath.Join(dir, "src", "a.go"), filepath.Join(dir, "hl"))
			appendFile(filepath.Join(dir, "hl"), "x\n")
			os.Remove(filepath.Join(dir, "hl"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t, map[string]string{"src/a.go": "package a\n", ".gitignore": "ignored/\n", "other.txt": "o\n"})
			w := open(t, repo, "r1")
			dir, base, _ := w.Prepare(ctx, "a#1")
			// A first task leaves the record exact (fast paths on).
			write(t, dir, "other.txt", "o2\n")
			if _, err := w.Change(ctx, dir, base); err != nil {
				t.Fatal(err)
			}
			dir, base, _ = w.Prepare(ctx, "a#1")
			tc.agent(dir)
			write(t, dir, "mine.txt", "mine\n")
			ch, err := w.Change(ctx, dir, base)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(ch); got != "A mine.txt; M src/a.go" {
				t.Errorf("change %q: the write through the link was missed", got)
			}
			if v := w.Violations(ctx, dir, ch, []string{"mine.txt"}); len(v) != 1 || v[0] != "src/a.go" {
				t.Errorf("violations %v", v)
			}
			// The next task's clone is back at the tip.
			dir, _, _ = w.Prepare(ctx, "a#1")
			if got := read(t, dir, "src/a.go"); got != "package a\n" {
				t.Errorf("src/a.go after Prepare: %q", got)
			}
		})
	}
}

func appendFile(p, s string) {
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return
	}
	f.WriteString(s)
	f.Close()
}

// Concurrent runs in one repository take distinct clones and none fails
// another (the linked-worktree pool's `git worktree prune` removed
// another run's half-made worktree).
func TestConcurrentRunsShareThePool(t *testing.T) {
	repo := newRepo(t, baseFiles())
	const rounds, runs = 6, 4
	seen := map[string]bool{}
	var mu sync.Mutex
	for r := 0; r < rounds; r++ {
		var wg sync.WaitGroup
		for i := 0; i < runs; i++ {
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				w, err := Open(ctx, Options{Repo: repo, RunID: id, MaxClones: 2 * runs})
				if err != nil {
					t.Error(err)
					return
				}
				defer w.Close(ctx)
				for _, s := range []string{"a#1", "a#2"} {
					if _, conf := task(t, w, s, id+s, map[string]string{"f-" + id + s[2:]: id}, nil); len(conf) > 0 {
						t.Errorf("%s %s: conflicts %v", id, s, conf)
					}
					mu.Lock()
					seen[w.slots[s].dir] = true
					mu.Unlock()
				}
			}(fmt.Sprintf("r%d-%d", r, i))
		}
		wg.Wait()
	}
	// Each run used two clones at once; the pool never grew past what
	// the runs needed at the same time.
	if len(seen) > 2*runs {
		t.Errorf("%d clones used, want at most %d", len(seen), 2*runs)
	}
	p, _ := openPool(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "muster"), g(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir"), 0)
	if ids, _, _ := p.cloneIDs(); len(ids) > 2*runs {
		t.Errorf("pool holds %d clones", len(ids))
	}
}

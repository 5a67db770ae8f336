package git

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// TestFastStageIgnoresAsGit: staging the paths the watcher saw leaves
// out exactly what git ignores, whether git is asked (an ignore rule
// exists somewhere) or not (none can apply): the user's info/exclude, a
// tracked .gitignore below the root, an excludes file the user's config
// names, and none at all.
func TestFastStageIgnoresAsGit(t *testing.T) {
	excludes := filepath.Join(t.TempDir(), "excludes")
	if err := os.WriteFile(excludes, []byte("*.bak\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		setup func(repo string)
		files []string
		want  string
	}{
		{"nothing ignored", func(string) {}, []string{"a.secret", "out/t1.txt", "deep/er/x.tmp"},
			"A a.secret; A deep/er/x.tmp; A out/t1.txt"},
		{"info/exclude", func(repo string) { write(t, repo, ".git/info/exclude", "# mine\n*.secret\n") },
			[]string{"a.secret", "out/b.secret", "b.txt"}, "A b.txt"},
		{"a tracked .gitignore below the root", func(repo string) {
			write(t, repo, "sub/.gitignore", "*.tmp\n")
			g(t, repo, "add", "sub/.gitignore")
			g(t, repo, "commit", "-qm", "ignore")
		}, []string{"sub/x.tmp", "sub/in/y.tmp", "sub/y.txt", "z.tmp"}, "A sub/y.txt; A z.tmp"},
		{"core.excludesFile", func(repo string) { g(t, repo, "config", "core.excludesFile", excludes) },
			[]string{"z.bak", "out/q.bak", "q.txt"}, "A q.txt"},
		{"core.excludesFile through include.path", func(repo string) {
			inc := filepath.Join(t.TempDir(), "inc")
			if err := os.WriteFile(inc, []byte("[core]\n\texcludesFile = "+excludes+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			g(t, repo, "config", "include.path", inc)
		}, []string{"z.bak", "out/q.bak", "q.txt"}, "A q.txt"},
		{"core.excludesFile through includeIf gitdir", func(repo string) {
			inc := filepath.Join(t.TempDir(), "inc")
			if err := os.WriteFile(inc, []byte("[core]\n\texcludesFile = "+excludes+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			g(t, repo, "config", "includeIf.gitdir:"+repo+"/.git.path", inc)
		}, []string{"z.bak", "out/q.bak", "q.txt"}, "A q.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t, nil)
			c.setup(repo)
			w := open(t, repo, "r1")
			eachRound(t, w, func(_ int, dir string) {
				for _, f := range c.files {
					write(t, dir, f, "agent\n")
				}
			}, func(round int, dir, base string, ch *muster.Change) {
				if got := render(ch); got != c.want {
					t.Errorf("round %d: change %s, want %s", round, got, c.want)
				}
				// (git's full scan in the clone, without the user's config)
				if got, full := render(ch), fullChange(t, dir, base); got != full && !strings.HasPrefix(c.name, "core.excludesFile") {
					t.Errorf("round %d: change %s, git's full scan %s", round, got, full)
				}
			})
			if w.watch && w.fastStages.Load() == 0 {
				t.Error("the watcher's stage was never used")
			}
		})
	}
}

// TestDefaultExcludesFile: git's excludes file when core.excludesFile is
// not set (xdg_config_home).
func TestDefaultExcludesFile(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/h"}, "/h/.config/git/ignore"},
		{[]string{"HOME=/h", "XDG_CONFIG_HOME=/x"}, "/x/git/ignore"},
		{[]string{"HOME=/h", "XDG_CONFIG_HOME="}, "/h/.config/git/ignore"},
		{[]string{"HOME="}, "/.config/git/ignore"},
		{[]string{"PATH=/bin"}, ""},
	} {
		if got := defaultExcludesFile(c.env); got != c.want {
			t.Errorf("%q: %q, want %q", c.env, got, c.want)
		}
	}
}

// TestRelativeExcludesFileAsksGit: a relative XDG_CONFIG_HOME or HOME
// names an excludes file git resolves against its working directory,
// the clone, where the agent can write it: the skip must not judge it
// from muster's own directory.
func TestRelativeExcludesFileAsksGit(t *testing.T) {
	for _, c := range []struct {
		env  []string
		file string
	}{
		{[]string{"HOME=/nonexistent", "XDG_CONFIG_HOME=rel"}, "rel/git/ignore"},
		{[]string{"HOME=h"}, "h/.config/git/ignore"},
	} {
		repo := newRepo(t, nil)
		write(t, repo, c.file, "*.secret\n") // the agent's, in its clone
		var env []string
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); k != "HOME" && k != "XDG_CONFIG_HOME" {
				env = append(env, kv)
			}
		}
		cmd := exec.Command("git", "check-ignore", "-q", "a.secret")
		cmd.Dir, cmd.Env = repo, append(env, append([]string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull}, c.env...)...)
		if err := cmd.Run(); err != nil {
			t.Fatalf("%q: git does not ignore a.secret: %v", c.env, err)
		}
		if noExcludesFile(c.env) {
			t.Errorf("%q: the skip says no excludes file applies; git ignores a.secret by %s", c.env, c.file)
		}
	}
	if !noExcludesFile([]string{"HOME=/nonexistent"}) {
		t.Error("an absent absolute excludes file: git is asked all the same")
	}
}

// TestAgentGitignoreAsGit: .gitignore files the agent writes during its
// task (deep below the root, at the root with a negation, a symlink to
// patterns elsewhere, one that ignores itself) leave out of its change
// what git's full scan leaves out, through the watcher's stage too.
func TestAgentGitignoreAsGit(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string // "->" content: a symlink
	}{
		{"deep", map[string]string{"deep/er/.gitignore": "*.tmp\n", "deep/er/x.tmp": "a", "deep/er/in/y.tmp": "a", "deep/z.tmp": "a"}},
		{"negation at the root", map[string]string{".gitignore": "*.log\n!keep.log\n", "a.log": "a", "keep.log": "a", "sub/b.log": "a"}},
		{"a symlink", map[string]string{"patterns": "*.tmp\n", "sub/.gitignore": "->../patterns", "sub/x.tmp": "a", "sub/y": "a"}},
		{"itself", map[string]string{"sub/.gitignore": "*\n", "sub/x": "a", "y": "a"}},
		{"a directory pattern", map[string]string{"a/.gitignore": "b/\n", "a/b/c/d": "a", "a/bb": "a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t, nil)
			w := open(t, repo, "r1")
			for round := range 2 {
				dir, base, err := w.Prepare(ctx, "a#1")
				if err != nil {
					t.Fatal(err)
				}
				for f, content := range c.files {
					if target, ok := strings.CutPrefix(content, "->"); ok {
						if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.Symlink(target, filepath.Join(dir, f)); err != nil {
							t.Fatal(err)
						}
						continue
					}
					write(t, dir, f, content)
				}
				ch, err := w.Change(ctx, dir, base)
				if err != nil {
					t.Fatal(err)
				}
				if got, full := render(ch), fullChange(t, dir, base); got != full {
					t.Errorf("round %d: change %s, git's full scan %s", round, got, full)
				}
			}
		})
	}
}

// TestMovedInGitignoreAsGit: a directory holding a .gitignore, made
// outside the clone (or in it) and moved into place in one rename, so
// that no event names the .gitignore itself, leaves out what git's full
// scan leaves out.
func TestMovedInGitignoreAsGit(t *testing.T) {
	for _, outside := range []bool{true, false} {
		repo := newRepo(t, map[string]string{"README.md": "r\n", "keep/.gitignore": "*.log\n"})
		w := open(t, repo, "r1")
		for round := range 2 {
			dir, base, err := w.Prepare(ctx, "a#1")
			if err != nil {
				t.Fatal(err)
			}
			src := filepath.Join(t.TempDir(), "stage")
			if !outside {
				src = filepath.Join(dir, "keep", "stage.log") // in an ignored place
			}
			write(t, src, ".gitignore", "*.tmp\n")
			write(t, src, "x.tmp", "a")
			write(t, src, "in/y.tmp", "a")
			write(t, src, "z", "a")
			if err := os.Rename(src, filepath.Join(dir, "moved")); err != nil {
				t.Fatal(err)
			}
			ch, err := w.Change(ctx, dir, base)
			if err != nil {
				t.Fatal(err)
			}
			if got, full := render(ch), fullChange(t, dir, base); got != full {
				t.Errorf("outside %v, round %d: change %s, git's full scan %s", outside, round, got, full)
			}
		}
	}
}

// TestLinkedWorktreeExcludesAsGit: run from a linked worktree of the
// user's repository, the info/exclude that counts is the common
// directory's (git has no per-worktree one): staging leaves out what it
// names, through the watcher's stage too.
func TestLinkedWorktreeExcludesAsGit(t *testing.T) {
	main := newRepo(t, nil)
	write(t, main, ".git/info/exclude", "*.secret\n")
	linked := filepath.Join(t.TempDir(), "linked")
	g(t, main, "worktree", "add", "-q", "--detach", linked)
	w := open(t, linked, "r1")
	eachRound(t, w, func(_ int, dir string) {
		for _, f := range []string{"a.secret", "out/b.secret", "b.txt"} {
			write(t, dir, f, "agent\n")
		}
	}, func(round int, _, _ string, ch *muster.Change) {
		if got := render(ch); got != "A b.txt" {
			t.Errorf("round %d: change %s, want A b.txt", round, got)
		}
	})
}

// TestMovedInRepoAsGit: a directory holding a repository of its own,
// made outside the clone and moved into place in one rename, is in the
// change as muster shows a nested repository (its .git, a violation;
// never a gitlink nor its files), through the watcher's stage too.
func TestMovedInRepoAsGit(t *testing.T) {
	repo := newRepo(t, nil)
	w := open(t, repo, "r1")
	eachRound(t, w, func(_ int, dir string) {
		src := newRepo(t, map[string]string{"inner": "i\n"})
		write(t, src, "loose", "l\n")
		if err := os.Rename(src, filepath.Join(dir, "nested")); err != nil {
			t.Fatal(err)
		}
	}, func(round int, _, _ string, ch *muster.Change) {
		if got := render(ch); got != "A nested/.git" {
			t.Errorf("round %d: change %s, want A nested/.git", round, got)
		}
	})
}

// The environment of muster's git calls holds no relative HOME or
// XDG_CONFIG_HOME (git would read the excludes file they name inside
// the clone it runs in, which the agent writes): each is made absolute
// against muster's own directory, so git reads the file the skip looks
// at, and a clone's planted one counts for nothing.
func TestGitEnvAbsoluteHome(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	env := gitEnv([]string{"HOME=h", "XDG_CONFIG_HOME=rel/x", "PATH=/bin", "OTHER=rel"})
	want := map[string]string{"HOME": filepath.Join(wd, "h"), "XDG_CONFIG_HOME": filepath.Join(wd, "rel/x"), "PATH": "/bin", "OTHER": "rel"}
	for k, v := range want {
		found := false
		for _, kv := range env {
			if kv == k+"="+v {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want %s=%s in %q", k, k, v, env)
		}
	}
	if f := defaultExcludesFile(env); !filepath.IsAbs(f) || !noExcludesFile(env) {
		t.Errorf("excludes file %q: want an absolute path the skip can look at", f)
	}
}

// eachRound prepares the clone of slot a#1 twice (the second round's
// stage is the watcher's), has write change it, and calls check with the
// change muster computed there.
func eachRound(t *testing.T, w *Workspace, write func(round int, dir string), check func(round int, dir, base string, ch *muster.Change)) {
	t.Helper()
	for round := range 2 {
		dir, base, err := w.Prepare(ctx, "a#1")
		if err != nil {
			t.Fatal(err)
		}
		write(round, dir)
		ch, err := w.Change(ctx, dir, base)
		if err != nil {
			t.Fatal(err)
		}
		check(round, dir, base, ch)
	}
}

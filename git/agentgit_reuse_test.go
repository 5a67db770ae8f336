package git

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	muster "github.com/muster-run/muster"
)

// TestAgentGitTamperingDoesNotSurvive: between two tasks on one clone the
// agent tampers with the clone's own .git in each way below; the next
// Prepare (which reuses an untouched .git rather than making it afresh)
// must leave muster's template exactly: its config, no hook, HEAD at the
// tip as a regular file, an index of one name that is a copy of muster's,
// and nothing written through a link.
func TestAgentGitTamperingDoesNotSurvive(t *testing.T) {
	outsideDir := t.TempDir()
	outside := filepath.Join(outsideDir, "secret")
	tampers := map[string]func(t *testing.T, dir string){
		"config appended": func(t *testing.T, dir string) {
			appendFile(filepath.Join(dir, ".git", "config"), "[core]\n\thooksPath = /tmp/evil\n")
		},
		"config rewritten, same size": func(t *testing.T, dir string) {
			p := filepath.Join(dir, ".git", "config")
			b, _ := os.ReadFile(p)
			if err := os.WriteFile(p, bytes.Repeat([]byte("#"), len(b)), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		"hook added": func(t *testing.T, dir string) {
			write(t, dir, ".git/hooks/post-checkout", "#!/bin/sh\necho evil\n")
		},
		"HEAD a link into the worktree": func(t *testing.T, dir string) {
			p := filepath.Join(dir, ".git", "HEAD")
			os.Remove(p)
			if err := os.Symlink("../a.txt", p); err != nil {
				t.Fatal(err)
			}
		},
		"index a hard link outside": func(t *testing.T, dir string) {
			p := filepath.Join(dir, ".git", "index")
			os.Remove(p)
			if err := os.Link(outside, p); err != nil {
				t.Skip("no hard link here:", err)
			}
		},
		"index a FIFO": func(t *testing.T, dir string) {
			p := filepath.Join(dir, ".git", "index")
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip("no FIFO here:", err)
			}
		},
		"alternates rewritten": func(t *testing.T, dir string) {
			write(t, dir, ".git/objects/info/alternates", outsideDir+"\n")
		},
		"exclude rewritten": func(t *testing.T, dir string) {
			write(t, dir, ".git/info/exclude", "*\n")
		},
		"objects planted": func(t *testing.T, dir string) {
			write(t, dir, ".git/objects/ab/cdef", "x")
		},
	}
	for name, tamper := range tampers {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(outside, []byte("secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			repo := newRepo(t, map[string]string{"a.txt": "a\n"})
			w := open(t, repo, "r1")
			var dir, base string
			for i := 0; i < 3; i++ { // a .git muster made and then reused
				var err error
				if dir, base, err = w.Prepare(ctx, "a#1"); err != nil {
					t.Fatal(err)
				}
				write(t, dir, "b.txt", "b"+string(rune('0'+i))+"\n")
				if _, err := w.Change(ctx, dir, base); err != nil {
					t.Fatal(err)
				}
			}
			if w.slots["a#1"].agentSig == nil {
				t.Fatal("no record of the clone's .git: its reuse goes untested")
			}
			tamper(t, dir)
			done := make(chan error, 1)
			go func() { _, _, err := w.Prepare(ctx, "a#1"); done <- err }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("Prepare blocked")
			}
			checkAgentGit(t, w, dir, base, true)
			if got, _ := os.ReadFile(outside); string(got) != "secret\n" {
				t.Errorf("the file outside became %q", got)
			}
			if got := read(t, dir, "a.txt"); got != "a\n" {
				t.Errorf("a.txt became %q", got)
			}
		})
	}
}

// checkAgentGit checks the clone's .git against muster's template at tip.
// With status, the clone's own git must find it clean (which rewrites
// its index).
func checkAgentGit(t *testing.T, w *Workspace, dir, tip string, status bool) {
	t.Helper()
	gd := filepath.Join(dir, ".git")
	if b, err := os.ReadFile(filepath.Join(gd, "config")); err != nil || !bytes.Equal(b, w.agentCfg) {
		t.Errorf("config %q, want muster's", b)
	}
	for f, want := range map[string]string{"HEAD": tip + "\n", "objects/info/alternates": w.objects + "\n", "info/exclude": string(w.excludes)} {
		p := filepath.Join(gd, filepath.FromSlash(f))
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s is not a regular file: %v", f, err)
			continue
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s = %q, want %q", f, b, want)
		}
	}
	for _, f := range []string{"hooks", "objects/ab"} {
		if _, err := os.Lstat(filepath.Join(gd, filepath.FromSlash(f))); err == nil {
			t.Errorf("%s survived", f)
		}
	}
	fi, err := os.Lstat(filepath.Join(gd, "index"))
	if err != nil || !fi.Mode().IsRegular() || hardLinked(fi) {
		t.Fatalf("index: %v %v", fi, err)
	}
	mine, _ := os.ReadFile(filepath.Join(w.slots["a#1"].gitDir, indexName))
	if theirs, _ := os.ReadFile(filepath.Join(gd, "index")); !bytes.Equal(mine, theirs) {
		t.Error("the clone's index is not a copy of muster's")
	}
	if !status {
		return
	}
	if st := g(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("clone after Prepare:\n%s", st)
	}
}

// TestAgentGitReusedWhenUntouched: a clone whose .git the agent left alone
// keeps it: only HEAD and the index are written again, in place, and the
// result is the template at the new tip.
func TestAgentGitReusedWhenUntouched(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	w := open(t, repo, "r1")
	for i := 0; i < 4; i++ {
		dir, base, err := w.Prepare(ctx, "a#1")
		if err != nil {
			t.Fatal(err)
		}
		// The agent's own git status replaces its index: still reused.
		checkAgentGit(t, w, dir, base, i >= 2)
		write(t, dir, "b.txt", "b"+string(rune('0'+i))+"\n")
		c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Run: "r1", Task: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if _, conf, err := w.Integrate(ctx, c, base); err != nil || len(conf) > 0 {
			t.Fatal(conf, err)
		}
	}
	if n := w.reusedAgentGits.Load(); n != 3 {
		t.Errorf("the clone's .git was reused %d times of 3", n)
	}
}

package git

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestChangeOfAFIFOGitOpens: an agent leaves a FIFO where git opens a
// file by name (.gitignore, .gitattributes, .gitmodules). Git never
// records a FIFO, but opening one blocks until a writer comes, which is
// never: staging the change hung, and the run with it. The FIFO is not
// part of the change and is gone; the agent's file is staged.
func TestChangeOfAFIFOGitOpens(t *testing.T) {
	t.Parallel()
	for _, watch := range []bool{true, false} {
		for _, name := range []string{".gitignore", "d/.gitignore", "d/.gitattributes", ".gitmodules", "d/sock"} {
			t.Run(filepath.Base(name)+map[bool]string{true: "/watch", false: "/scan"}[watch], func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				repo := newRepo(t, map[string]string{".gitignore": "*.log\n", "d/keep": "k\n"})
				w, err := Open(ctx, Options{Repo: repo, RunID: "f1", NoWatch: !watch})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { w.Close(context.Background()) })
				for i := 0; i < 2; i++ { // the first stage is a full one, the next may not be
					dir, base, err := w.Prepare(ctx, "a#1")
					if err != nil {
						t.Fatal(err)
					}
					write(t, dir, "d/a.txt", "a\n")
					p := filepath.Join(dir, filepath.FromSlash(name))
					os.Remove(p)
					if err := syscall.Mkfifo(p, 0o644); err != nil {
						t.Skip("no FIFO here:", err)
					}
					done := make(chan string, 1)
					go func() {
						ch, err := w.Change(ctx, dir, base)
						if err != nil {
							done <- "error: " + err.Error()
							return
						}
						done <- render(ch)
					}()
					var got string
					select {
					case got = <-done:
					case <-time.After(60 * time.Second):
						cancel()
						t.Fatalf("round %d: Change blocked on the FIFO %s", i, name)
					}
					want := "A d/a.txt"
					if name == ".gitignore" {
						want = "A d/a.txt; D .gitignore"
					}
					if got != want {
						t.Errorf("round %d: change %q, want %q", i, got, want)
					}
					if _, err := os.Lstat(p); err == nil {
						t.Errorf("round %d: the FIFO %s is still there", i, name)
					}
				}
			})
		}
	}
}

// TestFIFOLeftInAReusedClone: a FIFO left in a clone by a process that
// never staged it (killed while it hung) went nowhere: git clean leaves
// FIFOs, and the next process's watcher never saw it. The full reset of
// a clone's first use removes it.
func TestFIFOLeftInAReusedClone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newRepo(t, map[string]string{".gitignore": "*.log\n", "d/keep": "k\n"})
	w1, err := Open(ctx, Options{Repo: repo, RunID: "f1"})
	if err != nil {
		t.Fatal(err)
	}
	dir, _, err := w1.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "d", ".gitignore"), 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	w1.Close(ctx)
	w2 := open(t, repo, "f2")
	dir2, base, err := w2.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	if dir2 != dir {
		t.Skip("the clone was not reused")
	}
	if _, err := os.Lstat(filepath.Join(dir, "d", ".gitignore")); err == nil {
		t.Fatal("the FIFO outlived the reset")
	}
	write(t, dir, "d/a.txt", "a\n")
	if ch, err := w2.Change(ctx, dir, base); err != nil || render(ch) != "A d/a.txt" {
		t.Errorf("change %v, %v", ch, err)
	}
}

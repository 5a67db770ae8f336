package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	muster "github.com/muster-run/muster"
)

// landOne commits a new file in a fresh clone and integrates it,
// returning the new tip and the error.
func landOne(t *testing.T, w *Workspace, slot, file string) (string, error) {
	t.Helper()
	dir, base, err := w.Prepare(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, file, file+"\n")
	c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Task: muster.TaskID(strings.TrimSuffix(file, ".txt"))})
	if err != nil {
		t.Fatal(err)
	}
	tip, _, err := w.Integrate(ctx, c, base)
	return tip, err
}

// reflog returns the run branch's reflog lines, oldest first.
func reflog(t *testing.T, repo string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, ".git", "logs", "refs", "heads", "muster", "r1"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestMoveRefAsGit: muster moves its run branch itself, and leaves the
// ref, its reflog and git's view of both exactly as update-ref would:
// the identity and zone git logged the branch's creation with, the
// message, and nothing of the lock.
func TestMoveRefAsGit(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	base := g(t, repo, "rev-parse", "HEAD")
	tip, err := landOne(t, w, "a#1", "one.txt")
	if err != nil {
		t.Fatal(err)
	}
	if w.refMoves.Load() != 1 {
		t.Fatalf("%d moves in process, want 1", w.refMoves.Load())
	}
	if got := g(t, repo, "rev-parse", "refs/heads/muster/r1"); got != tip {
		t.Fatalf("branch at %s, want %s", got, tip)
	}
	log := reflog(t, repo)
	if len(log) != 2 {
		t.Fatalf("reflog %q", log)
	}
	// "old new Name <email> seconds zone\tmessage": all but the time as
	// git's own line (the branch's creation) has it.
	created, _, _ := strings.Cut(log[0], "\t")
	moved, msg, _ := strings.Cut(log[1], "\t")
	cf, mf := strings.Fields(created), strings.Fields(moved)
	if len(cf) != len(mf) || mf[0] != base || mf[1] != tip || msg != "muster: task" {
		t.Fatalf("moved %q, created %q", log[1], log[0])
	}
	if strings.Join(cf[2:len(cf)-2], " ") != strings.Join(mf[2:len(mf)-2], " ") || cf[len(cf)-1] != mf[len(mf)-1] {
		t.Errorf("identity or zone differ from git's: %q vs %q", log[1], log[0])
	}
	if got := g(t, repo, "reflog", "show", "--format=%gs", "refs/heads/muster/r1"); !strings.HasPrefix(got, "muster: task\n") {
		t.Errorf("git reads the reflog as %q", got)
	}
	if _, err := os.Lstat(filepath.Join(repo, ".git", "refs", "heads", "muster", "r1.lock")); err == nil {
		t.Error("lock left behind")
	}
	g(t, repo, "fsck", "--no-progress")
}

// TestMoveRefLeavesTheRestToGit: where git would do more than write the
// file (packed refs, an identity of its own, fsync asked of refs) or
// must refuse (a lock held, a link in place of the ref), update-ref
// runs, and the outcome is git's.
func TestMoveRefLeavesTheRestToGit(t *testing.T) {
	t.Run("packed", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		w := open(t, repo, "r1")
		g(t, repo, "pack-refs", "--all")
		tip, err := landOne(t, w, "a#1", "one.txt")
		if err != nil || g(t, repo, "rev-parse", "refs/heads/muster/r1") != tip || w.refMoves.Load() != 0 {
			t.Fatalf("tip %s, err %v, moves in process %d", tip, err, w.refMoves.Load())
		}
	})
	t.Run("committer config", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		g(t, repo, "config", "committer.name", "Other Name")
		w := open(t, repo, "r1")
		if _, err := landOne(t, w, "a#1", "one.txt"); err != nil || w.refMoves.Load() != 0 {
			t.Fatalf("err %v, moves in process %d", err, w.refMoves.Load())
		}
		if log := reflog(t, repo); !strings.Contains(log[len(log)-1], "Other Name") {
			t.Errorf("git's move logged %q", log[len(log)-1])
		}
	})
	t.Run("fsync", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		g(t, repo, "config", "core.fsync", "reference")
		w := open(t, repo, "r1")
		if _, err := landOne(t, w, "a#1", "one.txt"); err != nil || w.refMoves.Load() != 0 {
			t.Fatalf("err %v, moves in process %d", err, w.refMoves.Load())
		}
	})
	t.Run("HEAD on the run branch", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		w := open(t, repo, "r1")
		g(t, repo, "symbolic-ref", "HEAD", "refs/heads/muster/r1")
		if _, err := landOne(t, w, "a#1", "one.txt"); err != nil || w.refMoves.Load() != 0 {
			t.Fatalf("err %v, moves in process %d", err, w.refMoves.Load())
		}
		if got := g(t, repo, "reflog", "show", "--format=%gs", "HEAD"); !strings.HasPrefix(got, "muster: task") {
			t.Errorf("HEAD's reflog: %q", got)
		}
	})
	t.Run("lock held", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		w := open(t, repo, "r1")
		before := g(t, repo, "rev-parse", "refs/heads/muster/r1")
		lock := filepath.Join(repo, ".git", "refs", "heads", "muster", "r1.lock")
		if err := os.WriteFile(lock, []byte("someone else\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := landOne(t, w, "a#1", "one.txt")
		if err == nil || g(t, repo, "rev-parse", "refs/heads/muster/r1") != before {
			t.Fatalf("moved under another's lock: %v", err)
		}
		if b, _ := os.ReadFile(lock); string(b) != "someone else\n" {
			t.Errorf("the other's lock was touched: %q", b)
		}
	})
	t.Run("ref a link", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		w := open(t, repo, "r1")
		refs := filepath.Join(repo, ".git", "refs", "heads", "muster")
		at := g(t, repo, "rev-parse", "refs/heads/muster/r1")
		// A link to a file holding the same id: git takes the link for
		// a symbolic ref; muster never writes through it.
		if err := os.WriteFile(filepath.Join(refs, "target"), []byte(at+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(refs, "r1")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("target", filepath.Join(refs, "r1")); err != nil {
			t.Fatal(err)
		}
		// update-ref --no-deref replaces the link with a file.
		if _, err := landOne(t, w, "a#1", "one.txt"); err != nil || w.refMoves.Load() != 0 {
			t.Fatalf("moves in process %d, err %v", w.refMoves.Load(), err)
		}
		if b, _ := os.ReadFile(filepath.Join(refs, "target")); string(b) != at+"\n" {
			t.Errorf("written through the link: %q", b)
		}
	})
}

// TestMoveRefNotAtOld: the ref somewhere else between muster's check
// and its lock: nothing is written, the lock is released, and the
// caller's update-ref reports it.
func TestMoveRefNotAtOld(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	at := g(t, repo, "rev-parse", "refs/heads/muster/r1")
	other := strings.Repeat("1", len(at))
	if moved, err := w.moveRef(other, at); moved || err != nil {
		t.Fatalf("moved %v, err %v", moved, err)
	}
	if got := g(t, repo, "rev-parse", "refs/heads/muster/r1"); got != at {
		t.Errorf("ref at %s", got)
	}
	if _, err := os.Lstat(filepath.Join(repo, ".git", "refs", "heads", "muster", "r1.lock")); err == nil {
		t.Error("lock left behind")
	}
	if n := len(reflog(t, repo)); n != 1 {
		t.Errorf("%d reflog lines", n)
	}
}

package git

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestHostScrubFollowsNoLink: a fleet worker's agent leaves its clone's
// .git/config a symbolic link to a file of the user's, .git/objects/info
// a link to a directory of the user's, and .git/info a hard link's
// worth of trouble: the scrub before muster's own git calls (Result,
// then the next Checkout) writes through none of them. Nothing outside
// the clone changes, and the config muster writes is a file of one name
// that no other name (a hard link the agent kept in its home) reaches.
func TestHostScrubFollowsNoLink(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	base := g(t, repo, "rev-parse", "HEAD")
	tmp := t.TempDir()
	h := &Host{Root: filepath.Join(tmp, "host")}
	b := filepath.Join(tmp, "b.bundle")
	if err := WriteBundle(ctx, repo, base, nil, b); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Receive(ctx, base, b); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(tmp, "user")
	write(t, victim, "dotfile", "the user's own\n")
	write(t, victim, "alternates", "the user's alternates\n")
	home := filepath.Join(tmp, "agent-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"result", "checkout"} {
		dir, err := h.Checkout(ctx, base, "sh", 1, base)
		if err != nil {
			t.Fatal(err)
		}
		gd := filepath.Join(dir, ".git")
		// The agent's work.
		cfg := filepath.Join(gd, "config")
		if step == "result" {
			if err := os.Remove(cfg); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(victim, "dotfile"), cfg); err != nil {
				t.Fatal(err)
			}
		} else {
			kept := filepath.Join(home, "kept")
			_ = os.Remove(kept)
			if err := os.Link(cfg, kept); err != nil {
				t.Fatal(err)
			}
		}
		info := filepath.Join(gd, "objects", "info")
		if err := os.RemoveAll(info); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, info); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "a.txt", "changed\n")
		// muster's.
		if step == "result" {
			_, _, err = h.Result(ctx, base, "sh", 1, base, filepath.Join(tmp, "r.bundle"))
		} else {
			_, err = h.Checkout(ctx, base, "sh", 1, base)
		}
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := read(t, victim, "dotfile"); got != "the user's own\n" {
			t.Errorf("%s wrote through the agent's link to a file of the user's: %q", step, got)
		}
		if got, err := os.ReadFile(filepath.Join(victim, "alternates")); err != nil || string(got) != "the user's alternates\n" {
			t.Errorf("%s wrote or removed through the agent's link to a directory: %q, %v", step, got, err)
		}
		if fi, err := os.Lstat(cfg); err != nil || !fi.Mode().IsRegular() || hardLinked(fi) {
			t.Errorf("%s: the clone's config is not a file of one name: %v, %v", step, fi, err)
		}
	}
}

// TestScratchOutOfSharedTmp: what muster keeps while it records a fleet
// worker's result (a throw-away index and the objects of the result) or
// snapshots a worktree for a remote job lies in a directory of its own,
// never in TMPDIR: without namespaces /tmp is writable to every confined
// agent on the host (confine.Shared), and one running beside the job
// could rewrite the index between `add` and `write-tree`, putting into
// another task's result what its work tree (and the gates) never held.
// A TMPDIR that does not exist shows it: nothing is made there.
func TestScratchOutOfSharedTmp(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	base := g(t, repo, "rev-parse", "HEAD")
	tmp := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(tmp, "cache"))
	h := &Host{Root: filepath.Join(tmp, "host")}
	b := filepath.Join(tmp, "b.bundle")
	if err := WriteBundle(ctx, repo, base, nil, b); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Receive(ctx, base, b); err != nil {
		t.Fatal(err)
	}
	dir, err := h.Checkout(ctx, base, "sh", 1, base)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "a.txt", "changed\n")
	shared := filepath.Join(tmp, "shared-tmp-that-is-not-there")
	t.Setenv("TMPDIR", shared)
	if _, changed, err := h.Result(ctx, base, "sh", 1, base, filepath.Join(tmp, "r.bundle")); err != nil || !changed {
		t.Errorf("result: changed %v, %v", changed, err)
	}
	write(t, repo, "a.txt", "A\n")
	if _, err := Snapshot(ctx, repo, base); err != nil {
		t.Errorf("snapshot: %v", err)
	}
	if _, err := os.Stat(shared); err == nil {
		t.Error("something made the shared TMPDIR")
	}
}

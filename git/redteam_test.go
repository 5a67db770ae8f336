package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedIndexTempNameIsNoWayOut (red team): the agent leaves, beside
// the clone's shared index part, a link named as the temporary file
// muster copies the part through (and removes the part, so that the
// next Prepare copies it again). Muster's copy must not write through
// the link: the worktree file it points to stays the tip's, and so does
// every other file.
func TestSharedIndexTempNameIsNoWayOut(t *testing.T) {
	for _, kind := range []string{"symlink", "hard link"} {
		t.Run(kind, func(t *testing.T) {
			repo := newRepo(t, map[string]string{"a.txt": "a\n"})
			w := open(t, repo, "r1")
			var dir, base string
			for i := 0; i < 3; i++ { // a .git muster made, then reused
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
			parts, _ := filepath.Glob(filepath.Join(dir, ".git", "sharedindex.*"))
			if len(parts) == 0 {
				t.Fatal("no shared index part in the clone's .git")
			}
			for _, p := range parts {
				os.Remove(p)
				var err error
				if kind == "symlink" {
					err = os.Symlink("../a.txt", p+".tmp")
				} else {
					err = os.Link(filepath.Join(dir, "a.txt"), p+".tmp")
				}
				if err != nil {
					t.Skip(err)
				}
			}
			if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
				t.Fatal(err)
			}
			if got := read(t, dir, "a.txt"); got != "a\n" {
				t.Errorf("a.txt after Prepare: %q", strings.ToValidUTF8(got[:min(len(got), 40)], "?"))
			}
			checkAgentGit(t, w, dir, base, true)
		})
	}
}

// TestAgentGitModeDoesNotSurvive (red team): the agent changes the mode
// of the clone's .git itself (world-writable, setgid, sticky); the next
// Prepare must not hand the next agent that directory.
func TestAgentGitModeDoesNotSurvive(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	w := open(t, repo, "r1")
	var dir, base string
	for i := 0; i < 3; i++ {
		var err error
		if dir, base, err = w.Prepare(ctx, "a#1"); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "b.txt", "b"+string(rune('0'+i))+"\n")
		if _, err := w.Change(ctx, dir, base); err != nil {
			t.Fatal(err)
		}
	}
	gd := filepath.Join(dir, ".git")
	before, err := os.Lstat(gd)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(gd, 0o777|os.ModeSetgid|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
		t.Fatal(err)
	}
	after, err := os.Lstat(gd)
	if err != nil {
		t.Fatal(err)
	}
	if after.Mode() != before.Mode() {
		t.Errorf(".git's mode %v survived (muster made it %v)", after.Mode(), before.Mode())
	}
	checkAgentGit(t, w, dir, base, true)
}

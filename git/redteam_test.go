package git

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestSameSizeSameMtimeWriteIsSeen (red team): the user's repository says
// core.trustctime = false (or core.checkStat = minimal), which muster
// carries into its own calls. The agent rewrites a tracked file with
// content of the same size, sets its modification time back, and makes
// the watcher give up (a watched directory moved), so that muster stages
// by a full scan, which trusts the private index's stat data. The change
// must still hold the file, and the next Prepare must restore it: else
// the agent's edit is in no change (Owns never sees it) and stays in the
// clone for the next task's agent and gates.
func TestSameSizeSameMtimeWriteIsSeen(t *testing.T) {
	for _, cfg := range [][2]string{{"core.trustctime", "false"}, {"core.checkstat", "minimal"}} {
		t.Run(cfg[0], func(t *testing.T) {
			repo := newRepo(t, baseFiles())
			g(t, repo, "config", cfg[0], cfg[1])
			w := open(t, repo, "r1")
			var dir, base string
			for i := 0; i < 2; i++ {
				var err error
				if dir, base, err = w.Prepare(ctx, "a#1"); err != nil {
					t.Fatal(err)
				}
			}
			// Let the private index be written well after the file, as it
			// is when the agent works for a while: not racily clean.
			p := filepath.Join(dir, "tools", "run.sh")
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Change(ctx, dir, base); err != nil {
				t.Fatal(err)
			}
			// The agent writes in a later second than the file last
			// changed: git (built without USE_NSEC) compares change times
			// to the second, and file times lag the clock by a tick.
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
			orig := read(t, dir, "tools/run.sh")
			evil := strings.Replace(orig, "echo hi", "rm -rf/", 1)
			if len(evil) != len(orig) {
				t.Fatal("not the same size")
			}
			write(t, dir, "tools/run.sh", evil)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, "docs"), filepath.Join(dir, "docs2")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, "docs2"), filepath.Join(dir, "docs")); err != nil {
				t.Fatal(err)
			}
			ch, err := w.Change(ctx, dir, base)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(render(ch), "tools/run.sh") {
				t.Errorf("the change misses the rewritten tools/run.sh: %q", render(ch))
			}
			if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
				t.Fatal(err)
			}
			if got := read(t, dir, "tools/run.sh"); got != orig {
				t.Errorf("tools/run.sh after Prepare: %q", got)
			}
		})
	}
}

// TestCaseTwinIsSeen (red team): the user's repository says
// core.ignorecase = true (a repository made on a case-insensitive file
// system), which muster carried into its calls on clones that live on a
// case-sensitive one. The agent plants twins of tracked files that differ
// only in case ("makefile" beside "Makefile": make reads it first).
// Git with ignorecase takes them for the tracked files: no change
// names them, and clean leaves them, for the next task's agent and
// gates. The change must name them and the next Prepare remove them.
func TestCaseTwinIsSeen(t *testing.T) {
	files := baseFiles()
	files["Makefile"] = "test:\n\tgo test ./...\n"
	repo := newRepo(t, files)
	g(t, repo, "config", "core.ignorecase", "true")
	w := open(t, repo, "r1")
	dir, base, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "makefile")); err == nil {
		t.Skip("the clones' file system is case-insensitive")
	}
	for _, full := range []bool{false, true} {
		write(t, dir, "makefile", "test:\n\ttrue\n")
		write(t, dir, "src/A.go", "package a\n")
		if full { // the watcher gives up: a full scan
			if err := os.Rename(filepath.Join(dir, "docs"), filepath.Join(dir, "docs2")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(dir, "docs2"), filepath.Join(dir, "docs")); err != nil {
				t.Fatal(err)
			}
		}
		ch, err := w.Change(ctx, dir, base)
		if err != nil {
			t.Fatal(err)
		}
		if r := render(ch); !strings.Contains(r, "makefile") || !strings.Contains(r, "src/A.go") {
			t.Errorf("full scan %v: the change misses the twins: %q", full, r)
		}
		if dir, base, err = w.Prepare(ctx, "a#1"); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"makefile", "src/A.go"} {
			if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
				t.Errorf("full scan %v: %s survived Prepare", full, f)
			}
		}
	}
}

// TestDirBecomesLink (red team): the agent replaces a tracked directory
// by a link (outside the clone, or to another directory of it). The
// watcher saw the directory's files go and a path of that name come back;
// a path below the link is no path of the worktree (git refuses it), so
// Change must not fail on it (an agent could fail every check so) but
// agree with a full scan, and Prepare must bring the directory back,
// writing nothing through the link.
func TestDirBecomesLink(t *testing.T) {
	outside := t.TempDir()
	write(t, outside, "guide.txt", "guide\n")
	for _, target := range []string{outside, "src"} {
		repo := newRepo(t, baseFiles())
		w := open(t, repo, "r1")
		dir, base, err := w.Prepare(ctx, "a#1")
		if err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(filepath.Join(dir, "docs"))
		if err := os.Symlink(target, filepath.Join(dir, "docs")); err != nil {
			t.Fatal(err)
		}
		ch, err := w.Change(ctx, dir, base)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := render(ch), fullChange(t, dir, base); got != want {
			t.Errorf("%s: %q vs full %q", target, got, want)
		}
		if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
			t.Fatal(err)
		}
		checkPrepared(t, dir, base, "")
		if fi, err := os.Lstat(filepath.Join(dir, "docs")); err != nil || !fi.IsDir() {
			t.Errorf("%s: docs after Prepare: %v %v", target, fi, err)
		}
		if _, err := os.Stat(filepath.Join(outside, "guide.txt")); err != nil {
			t.Errorf("outside file gone: %v", err)
		}
	}
}

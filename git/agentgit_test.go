package git

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestAgentGitWritesNoFileThroughALink: a process an agent left behind
// (nothing ends it in the Landlock-only fallback) keeps swapping the
// clone's .git, and the directories muster makes in it, for links to a
// directory outside while muster makes the clone's git directory afresh.
// muster must write nothing there: each step goes through a root on the
// clone, which refuses a link that leads out of it.
func TestAgentGitWritesNoFileThroughALink(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	clone, outside, private := filepath.Join(base, "clone"), filepath.Join(base, "outside"), filepath.Join(base, "private")
	for _, d := range []string{clone, outside, private} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(private, indexName), []byte("muster's index"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &Workspace{agentCfg: []byte("[core]\n"), objects: filepath.Join(base, "objects"), excludes: []byte("")}
	s := &slot{dir: clone, gitDir: private}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the survivor
		defer wg.Done()
		targets := []string{".git", ".git/info", ".git/objects", ".git/objects/info", ".git/refs"}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := filepath.Join(clone, filepath.FromSlash(targets[i%len(targets)]))
			// Only at a path of the clone's own: never through a link
			// it made before (only it makes links, so this holds).
			if !realDirs(clone, filepath.Dir(p)) {
				continue
			}
			_ = os.RemoveAll(p)
			_ = os.Symlink(outside, p)
		}
	}()
	for range 400 {
		_ = w.agentGit(s, "0123456789012345678901234567890123456789")
	}
	close(stop)
	wg.Wait()
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("muster wrote through the agent's link: %v appeared outside the clone", names)
	}
	// Undisturbed, it still makes the git directory.
	if err := os.RemoveAll(filepath.Join(clone, ".git")); err != nil {
		t.Fatal(err)
	}
	if err := w.agentGit(s, "0123456789012345678901234567890123456789"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"HEAD", "config", "index", "objects/info/alternates", "info/exclude"} {
		if _, err := os.Stat(filepath.Join(clone, ".git", filepath.FromSlash(f))); err != nil {
			t.Errorf("the clone's .git lacks %s: %v", f, err)
		}
	}
}

// realDirs reports whether every directory from root down to dir is a
// directory, not a link.
func realDirs(root, dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return false
		}
		if d == root || len(d) <= len(root) {
			return true
		}
	}
}

// TestCopyIndexReadsOnlyARegularFile: an index muster copies out of a
// clone's .git (the fleet's snapshot seeds from it) is read only when it
// is a regular file: a FIFO planted there must not block muster, a link
// must not be followed.
func TestCopyIndexReadsOnlyARegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("not an index"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo, link := filepath.Join(dir, "fifo"), filepath.Join(dir, "link")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFO here:", err)
	}
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{fifo, link} {
		done := make(chan error, 1)
		go func() { done <- copyIndex(src, filepath.Join(dir, "copy")) }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s was copied", filepath.Base(src))
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("copyIndex(%s) blocked", filepath.Base(src))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "copy")); err == nil {
		t.Error("a copy was written")
	}
}

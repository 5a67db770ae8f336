package git

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// forge writes content through the outside name of path (a hard link)
// and puts the file's size and mtime back: only ctime tells, and the
// repository's config says not to trust it.
func forge(t *testing.T, path, outside, content string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(outside, time.Now(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
}

func forgeableRepo(t *testing.T) string {
	repo := newRepo(t, map[string]string{"src/a.go": "package a\n", "other.txt": "o\n", ".gitignore": "ignored/\n"})
	for _, kv := range [][2]string{{"core.trustctime", "false"}, {"core.checkStat", "minimal"}} {
		if out, err := gitOut(repo, "config", kv[0], kv[1]); err != nil {
			t.Fatal(err, out)
		}
	}
	return repo
}

// A hard link from a clone's file to a second name in an ignored
// directory of the clone, written through in the same task with the stat
// data put back (issue 21, item 9): staging re-hashes the file all the
// same (git alone, told not to trust ctime, would not).
func TestHardLinkIsRehashed(t *testing.T) {
	w := open(t, forgeableRepo(t), "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	write(t, dir, "other.txt", "o2\n")
	// An old mtime, staged: no longer racily clean, so git trusts it.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "src", "a.go"), old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Change(ctx, dir, base); err != nil {
		t.Fatal(err) // a first change leaves the record exact
	}
	dir, base, _ = w.Prepare(ctx, "a#1")
	if err := os.MkdirAll(filepath.Join(dir, "ignored"), 0o755); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "ignored", "hl")
	p := filepath.Join(dir, "src", "a.go")
	if err := os.Link(p, second); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "mine.txt", "mine\n")
	forge(t, p, second, "package b\n")
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(ch); got != "A mine.txt; M src/a.go" {
		t.Errorf("change %q: the write through the second name was missed", got)
	}
}

// The link made in one task (an outside name, and a second name inside
// the clone that tells muster) and written through in the next: the
// reset between them gave the clone a fresh file the outside name no
// longer reaches, so no later task commits what the write did.
func TestHardLinkDoesNotOutliveItsTask(t *testing.T) {
	w := open(t, forgeableRepo(t), "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	outside := filepath.Join(t.TempDir(), "hl")
	p := filepath.Join(dir, "src", "a.go")
	if err := os.Link(p, outside); err != nil {
		t.Skipf("no hard link across these directories: %v", err)
	}
	if err := os.Link(p, filepath.Join(dir, "hl2")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "other.txt", "o2\n")
	if _, err := w.Change(ctx, dir, base); err != nil {
		t.Fatal(err)
	}
	dir, base, _ = w.Prepare(ctx, "a#1")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok && s.Nlink != 1 {
		t.Fatalf("src/a.go has %d names after Prepare", s.Nlink)
	}
	write(t, dir, "mine.txt", "mine\n")
	forge(t, p, outside, "package b\n")
	if got := read(t, dir, "src/a.go"); got != "package a\n" {
		t.Fatalf("the outside name still reaches the clone's file: %q", got)
	}
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(ch); got != "A mine.txt" {
		t.Errorf("change %q", got)
	}
}

// muster's private index is split; the clone's own git directory gets a
// copy of the shared part, never a hard link to muster's file (an agent
// writing its .git/sharedindex.* would write muster's).
func TestAgentGitHasNoHardLinkToMustersIndex(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	w := open(t, repo, "r1")
	for i := 0; i < 3; i++ {
		dir, base, _ := w.Prepare(ctx, "a#1")
		write(t, dir, "a.txt", "a"+string(rune('0'+i))+"\n")
		if _, err := w.Change(ctx, dir, base); err != nil {
			t.Fatal(err)
		}
	}
	dir, _, _ := w.Prepare(ctx, "a#1")
	shared, _ := filepath.Glob(filepath.Join(dir, ".git", "sharedindex.*"))
	for _, f := range append(shared, filepath.Join(dir, ".git", "index")) {
		st, err := os.Stat(f)
		if err != nil {
			continue
		}
		if s, ok := st.Sys().(*syscall.Stat_t); ok && s.Nlink > 1 {
			t.Errorf("%s has %d links: shared with muster's private index", f, s.Nlink)
		}
	}
}

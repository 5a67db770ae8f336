package git

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	muster "github.com/muster-run/muster"
)

// gitTree is the tree git stages for the worktree dir against base: a
// fresh index, `add --all`, write-tree (the reference stageInProcess
// must match object for object).
func gitTree(t *testing.T, dir, base string) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	env := append(os.Environ(), "GIT_INDEX_FILE="+idx, "LC_ALL=C")
	run := func(args ...string) string {
		c := execCommand("git", args...)
		c.Dir, c.Env = dir, env
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("read-tree", base)
	run("add", "--all")
	return run("write-tree")
}

// stagedTree commits the clone's change and returns the commit's tree
// and the commit (base's tree and "" when nothing changed).
func stagedTree(t *testing.T, w *Workspace, repo, dir, base string) (tree, commit string) {
	t.Helper()
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Empty() {
		return g(t, repo, "rev-parse", base+"^{tree}"), ""
	}
	c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return g(t, repo, "rev-parse", c+"^{tree}"), c
}

// watched opens a workspace on repo (skipping without a file watcher)
// and prepares slot a#1 in it.
func watched(t *testing.T, repo string, keep ...string) (w *Workspace, dir, base string) {
	t.Helper()
	w = open(t, repo, "r1", keep...)
	if !w.watch {
		t.Skip("no file watcher here")
	}
	dir, base, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	return w, dir, base
}

// TestStageInProcessMatchesGit: the tree staged in process is the one
// git writes, for every kind of change the watcher records, and where
// git alone knows how (attributes, end-of-line conversion, a gitlink on
// the way) git stages it; the clone reset afterwards is exactly the
// next base, its index included.
func TestStageInProcessMatchesGit(t *testing.T) {
	files := baseFiles()
	files["deep/a/b/c.txt"] = "deep\n"
	files["deep/a/b/d.txt"] = "deep too\n"
	files["deep/a/other.txt"] = "other\n"
	files["filtered/.gitattributes"] = "*.txt text eol=crlf\n"
	files["filtered/f.txt"] = "line\n"
	cases := []struct {
		name   string
		edit   func(t *testing.T, dir string)
		inline bool
	}{
		{"new file in a new directory", func(t *testing.T, dir string) { write(t, dir, "out/x/new.txt", "new\n") }, true},
		{"modified and deleted", func(t *testing.T, dir string) {
			write(t, dir, "src/a.go", "package a // edited\n")
			os.Remove(filepath.Join(dir, "src/gone.go"))
		}, true},
		{"executable bit", func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "src/a.go"), 0o755) }, true},
		{"executable bit dropped", func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "tools/run.sh"), 0o644) }, true},
		{"symlink", func(t *testing.T, dir string) { os.Symlink("../README.md", filepath.Join(dir, "src/link")) }, true},
		{"file became a directory", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "docs/guide.txt"))
			write(t, dir, "docs/guide.txt/inner.txt", "now a directory\n")
		}, true},
		{"directory became a file", func(t *testing.T, dir string) {
			// Its old paths lie under a file now: the full staging.
			os.RemoveAll(filepath.Join(dir, "deep/a/b"))
			write(t, dir, "deep/a/b", "now a file\n")
		}, false},
		{"a whole directory removed", func(t *testing.T, dir string) { os.RemoveAll(filepath.Join(dir, "deep")) }, true},
		{"an empty directory made", func(t *testing.T, dir string) { os.MkdirAll(filepath.Join(dir, "empty/sub"), 0o755) }, true},
		{"attributes apply", func(t *testing.T, dir string) { write(t, dir, "filtered/g.txt", "converted\n") }, false},
		{"a name git checks", func(t *testing.T, dir string) { write(t, dir, "src/.gitkeep", "") }, false},
		{"after the full staging", func(t *testing.T, dir string) { write(t, dir, "deep/a/b2/x.txt", "x\n") }, true},
	}
	repo := newRepo(t, files)
	w := open(t, repo, "r1")
	if !w.watch {
		t.Skip("no file watcher here")
	}
	for _, c := range cases {
		dir, base, err := w.Prepare(ctx, "a#1")
		if err != nil {
			t.Fatal(err)
		}
		checkPrepared(t, dir, base, "")
		before := w.inProcessStages.Load()
		c.edit(t, dir)
		want := gitTree(t, dir, base)
		got, commit := stagedTree(t, w, repo, dir, base)
		if got != want {
			t.Errorf("%s: staged tree %s, git stages %s", c.name, got, want)
		}
		if inline := w.inProcessStages.Load() > before; inline != c.inline {
			t.Errorf("%s: staged in process %v, want %v", c.name, inline, c.inline)
		}
		if commit == "" {
			continue
		}
		land(t, w, commit, base)
	}
	dir, base, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	checkPrepared(t, dir, base, "")
}

// TestStageInProcessCarriedConfig: a user's config that converts files
// on their way in (core.autocrlf) leaves the staging to git.
func TestStageInProcessCarriedConfig(t *testing.T) {
	repo := newRepo(t, baseFiles())
	g(t, repo, "config", "core.autocrlf", "true")
	w, dir, base := watched(t, repo)
	write(t, dir, "src/crlf.go", "package a\r\n")
	if got, want := func() string { tr, _ := stagedTree(t, w, repo, dir, base); return tr }(), gitTree(t, dir, base); got != want {
		t.Errorf("staged tree %s, git stages %s", got, want)
	}
	if n := w.inProcessStages.Load(); n != 0 {
		t.Errorf("%d stagings in process with core.autocrlf", n)
	}
}

// TestStageInProcessResets: a clone whose change was staged in process
// (its private index still the base) resets exactly to the next tip,
// whether the task landed beside another one (the tip moved), failed
// (the same tip again: its new files go, its edits are undone) or was
// staged again after more edits.
func TestStageInProcessResets(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	if !w.watch {
		t.Skip("no file watcher here")
	}
	da, base, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	db, _, err := w.Prepare(ctx, "b#1")
	if err != nil {
		t.Fatal(err)
	}
	full := w.fullResets.Load() // each clone's first
	write(t, da, "out/a.txt", "a\n")
	write(t, db, "out/b.txt", "b\n")
	write(t, db, "src/a.go", "package a // b was here\n")
	_, ca := stagedTree(t, w, repo, da, base)
	_, cb := stagedTree(t, w, repo, db, base)
	for _, c := range []string{ca, cb} {
		land(t, w, c, base)
	}
	tip, err := w.Tip(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// a's clone: its index still holds base; the tip has b's files too.
	da, b2, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	if b2 != tip {
		t.Fatalf("prepared at %s, tip %s", b2, tip)
	}
	checkPrepared(t, da, tip, "")
	if got := read(t, da, "src/a.go"); got != "package a // b was here\n" {
		t.Errorf("src/a.go after the reset: %q", got)
	}
	// A task that fails: new files, an edit, a deletion, a file
	// written with the content it had, staged twice.
	write(t, da, "tmp/scratch.txt", "scratch\n")
	write(t, da, "src/b.go", read(t, da, "src/b.go"))
	write(t, da, "README.md", "rewritten\n")
	if _, err := w.Change(ctx, da, tip); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(da, "docs/guide.txt"))
	write(t, da, "more.txt", "more\n")
	if _, err := w.Change(ctx, da, tip); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
		t.Fatal(err)
	}
	// Every entry of the clone's index (a copy of muster's) has the
	// stat data of its file: none is to be checked again (before
	// status, which would refresh them).
	if out := g(t, da, "diff-files", "--name-only"); out != "" {
		t.Errorf("index entries out of date after the reset: %s", out)
	}
	checkPrepared(t, da, tip, "")
	for _, p := range []string{"tmp/scratch.txt", "more.txt"} {
		if _, err := os.Lstat(filepath.Join(da, p)); err == nil {
			t.Errorf("%s survived the reset", p)
		}
	}
	if w.inProcessStages.Load() < 4 || w.fullResets.Load() != full {
		t.Errorf("in process %d (want 4), full resets %d (want none)", w.inProcessStages.Load(), w.fullResets.Load()-full)
	}
}

// TestStageInProcessKeptFiles: a file staged in process that the next
// tip does not have is removed by the reset, unless a keep pattern may
// cover it: then git's clean decides, and keeps it, as for any file.
func TestStageInProcessKeptFiles(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w, dir, base := watched(t, repo, "cache/")
	write(t, dir, "cache/warm.bin", "kept\n")
	write(t, dir, "out/gone.txt", "dropped\n")
	if _, err := w.Change(ctx, dir, base); err != nil {
		t.Fatal(err)
	}
	if w.inProcessStages.Load() != 1 {
		t.Fatalf("%d stagings in process", w.inProcessStages.Load())
	}
	if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "out/gone.txt")); err == nil {
		t.Error("out/gone.txt survived the reset")
	}
	if got := read(t, dir, "cache/warm.bin"); got != "kept\n" {
		t.Errorf("kept file: %q", got)
	}
	checkPrepared(t, dir, base, "cache/")
}

func TestInlinePathsAndConfig(t *testing.T) {
	for p, want := range map[string]bool{
		"src/a.go": true, "a b/c d.txt": true, "deep/x/y/z": true, "é.txt": true,
		"": false, "a//b": false, "./a": false, "a/../b": false, ".git/config": false,
		"sub/.GIT/x": false, ".gitignore": false, "GIT~1/x": false, "a/b ": false, "a/b.": false,
		"a\\b": false, "c:d": false,
	} {
		if got := inlinePaths([]string{p}); got != want {
			t.Errorf("inlinePaths(%q) = %v, want %v", p, got, want)
		}
	}
	for _, c := range []struct {
		carry []string
		want  bool
	}{
		{nil, true},
		{[]string{"-c", "core.filemode=true", "-c", "core.autocrlf=false", "-c", "core.ignorecase=no"}, true},
		{[]string{"-c", "core.bigfilethreshold=1m", "-c", "core.checkstat=minimal"}, true},
		{[]string{"-c", "core.autocrlf=input"}, false},
		{[]string{"-c", "core.autocrlf=true"}, false},
		{[]string{"-c", "core.filemode=false"}, false},
		{[]string{"-c", "core.symlinks=false"}, false},
		{[]string{"-c", "core.ignorecase=true"}, false},
		{[]string{"-c", "core.eol=crlf"}, false},
		{[]string{"-c", "core.safecrlf=warn"}, false},
		{[]string{"-c", "core.precomposeunicode=true"}, false},
		{[]string{"-c", "core.sharedrepository=group"}, false},
	} {
		if got := plainCheckin(c.carry); got != c.want {
			t.Errorf("plainCheckin(%q) = %v, want %v", c.carry, got, c.want)
		}
	}
}

// TestStageInProcessSHA256: in a SHA-256 repository the staged trees
// and blobs are named and written as git's.
func TestStageInProcessSHA256(t *testing.T) {
	repo := t.TempDir()
	if out, err := gitOut(repo, "init", "-q", "-b", "main", "--object-format=sha256"); err != nil {
		t.Skip("no SHA-256 repositories here:", out)
	}
	g(t, repo, "config", "user.name", "Test User")
	g(t, repo, "config", "user.email", "test@example.com")
	for n, c := range baseFiles() {
		write(t, repo, n, c)
	}
	g(t, repo, "add", "-A")
	g(t, repo, "commit", "-q", "-m", "initial")
	w, dir, base := watched(t, repo)
	write(t, dir, "out/new.txt", "new\n")
	write(t, dir, "src/a.go", "package a // edited\n")
	os.Remove(filepath.Join(dir, "src/gone.go"))
	want := gitTree(t, dir, base)
	got, commit := stagedTree(t, w, repo, dir, base)
	if got != want || len(got) != 64 || w.inProcessStages.Load() != 1 {
		t.Fatalf("staged %s (in process %d), git stages %s", got, w.inProcessStages.Load(), want)
	}
	if _, conf, err := w.Integrate(ctx, commit, base); err != nil || conf != nil {
		t.Fatal(conf, err)
	}
	if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
		t.Fatal(err)
	}
	g(t, repo, "fsck", "--no-progress")
}

// TestSharedIndexPartsDoNotPileUp: a small repository's every task
// writes a new shared index part; the old ones go at once, from muster's
// private git directory and from the clone's own .git, which mirrors it.
func TestSharedIndexPartsDoNotPileUp(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	for i := range 12 {
		_, err := landOne(t, w, "a#1", fmt.Sprintf("f%02d.txt", i))
		if err != nil {
			t.Fatal(err)
		}
	}
	dir, _, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	s := w.slot("a#1")
	for _, d := range []string{s.gitDir, filepath.Join(dir, ".git")} {
		parts, _ := filepath.Glob(filepath.Join(d, "sharedindex.*"))
		if len(parts) > 2 {
			t.Errorf("%s holds %d shared index parts after 12 tasks", d, len(parts))
		}
	}
	checkPrepared(t, dir, g(t, repo, "rev-parse", "refs/heads/muster/r1"), "")
}

// TestInProcessFileAccessStaysInTheClone: a directory above a path that
// became a link out of the clone after it was looked at (an agent's
// process still running) neither lets staging read the file beyond it
// nor lets the reset remove it.
func TestInProcessFileAccessStaysInTheClone(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	write(t, outside, "secret", "not yours\n")
	if err := os.Symlink(outside, filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	w := &Workspace{objects: t.TempDir(), format: "sha1", maxFile: 1 << 20}
	if _, oid, err := w.hashFile(root, "a/secret"); err == nil {
		t.Errorf("staged a file beyond a link out of the clone: %s", oid)
	}
	if err := removeIn(dir, "a/secret"); err == nil {
		t.Error("removed a file beyond a link out of the clone")
	}
	if got := read(t, outside, "secret"); got != "not yours\n" {
		t.Errorf("outside file now %q", got)
	}
}

// land integrates commit, made on base, failing the test on a conflict.
func land(t *testing.T, w *Workspace, commit, base string) {
	t.Helper()
	if _, conf, err := w.Integrate(ctx, commit, base); err != nil || conf != nil {
		t.Fatalf("integrate %s: %v %v", commit, conf, err)
	}
}

// prepareExact prepares slot and fails unless its clone is exactly at
// the tip: every index entry's stat data fresh (diff-files, before
// status would refresh them), and checkPrepared.
func prepareExact(t *testing.T, w *Workspace, slot string) (dir, base string) {
	t.Helper()
	dir, base, err := w.Prepare(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	if out := g(t, dir, "diff-files", "--name-only"); out != "" {
		t.Errorf("index entries out of date after the reset: %s", out)
	}
	checkPrepared(t, dir, base, "")
	return dir, base
}

// otherTask runs a task on slot b#1: edit on its clone, staged and
// committed, not landed.
func otherTask(t *testing.T, w *Workspace, repo string, edit func(dir string)) (commit, base string) {
	t.Helper()
	dir, base, err := w.Prepare(ctx, "b#1")
	if err != nil {
		t.Fatal(err)
	}
	edit(dir)
	_, commit = stagedTree(t, w, repo, dir, base)
	return commit, base
}

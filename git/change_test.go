package git

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	muster "github.com/muster-run/muster"
)

var ctx = context.Background()

func baseFiles() map[string]string {
	return map[string]string{
		"README.md":      "hello\n",
		"src/a.go":       "package a\n",
		"src/b.go":       "package b\n\nfunc B() {}\n\n// a long enough body for rename detection\n",
		"src/gone.go":    "package gone\n",
		"tools/run.sh":   "#!/bin/sh\necho hi\n",
		"docs/guide.txt": "guide\n",
	}
}

func TestChangeKinds(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, base, err := w.Prepare(ctx, "claude#1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "src/a.go", "package a\n// edited\n")                             // modified
	write(t, dir, "src/new.go", "package a\n")                                      // added
	os.Remove(filepath.Join(dir, "src/gone.go"))                                    // deleted
	os.Rename(filepath.Join(dir, "src/b.go"), filepath.Join(dir, "src/renamed.go")) // renamed
	os.Chmod(filepath.Join(dir, "tools/run.sh"), 0o755)                             // mode
	write(t, dir, "img/logo.bin", "\x00\x01\x02\xff binary")                        // binary
	os.Symlink("../README.md", filepath.Join(dir, "docs/readme-link"))              // symlink
	os.Remove(filepath.Join(dir, "docs/guide.txt"))                                 // file -> symlink
	os.Symlink("../README.md", filepath.Join(dir, "docs/guide.txt"))
	write(t, dir, "build/out.o", "ignored")
	write(t, dir, ".gitignore", "build/\n")

	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	want := "A .gitignore; A docs/readme-link; A img/logo.bin; A src/new.go; D src/gone.go; M src/a.go; M tools/run.sh; R src/b.go->src/renamed.go; T docs/guide.txt"
	if got := render(ch); got != want {
		t.Errorf("change:\n got %s\nwant %s", got, want)
	}
	diff, err := w.Diff(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Binary files /dev/null and b/img/logo.bin differ", "+// edited", "rename from src/b.go", "new mode 100755", "new file mode 120000"} {
		if !strings.Contains(diff, s) {
			t.Errorf("diff lacks %q:\n%s", s, diff)
		}
	}
	// The commit holds exactly the change, on base, and moves no branch.
	tip0, _ := w.Tip(ctx)
	c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Run: "r1", Task: "t1", Title: "all kinds", Executor: "claude#1"})
	if err != nil {
		t.Fatal(err)
	}
	if p := g(t, repo, "rev-parse", c+"^"); p != base {
		t.Errorf("parent %s, want base %s", p, base)
	}
	if got := g(t, repo, "diff-tree", "-r", "-M", "--name-status", base, c); !strings.Contains(got, "R100\tsrc/b.go\tsrc/renamed.go") || strings.Contains(got, "build/") {
		t.Errorf("commit content:\n%s", got)
	}
	if tip, _ := w.Tip(ctx); tip != tip0 {
		t.Error("Commit moved the run branch")
	}
}

func TestChangeFoldsAgentCommitsAndIgnoresItsIndex(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	write(t, dir, "src/a.go", "package a\n// one\n")
	g(t, dir, "commit", "-qam", "agent commit 1")
	write(t, dir, "src/c.go", "package c\n")
	g(t, dir, "add", "src/c.go")
	g(t, dir, "commit", "-qm", "agent commit 2")
	write(t, dir, "src/d.go", "package d\n") // not committed
	write(t, dir, "src/e.go", "package e\n")
	g(t, dir, "add", "src/e.go") // staged only
	os.Remove(filepath.Join(dir, "src/e.go"))
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := render(ch), "A src/c.go; A src/d.go; M src/a.go"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestChangeAfterHeadMovedToAnotherBranch(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	g(t, dir, "checkout", "-q", "-b", "agent-branch")
	write(t, dir, "x.txt", "x\n")
	g(t, dir, "add", "x.txt")
	g(t, dir, "commit", "-qm", "on a branch")
	// The change is the work tree against base, wherever HEAD is.
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(ch); got != "A x.txt" {
		t.Errorf("got %s", got)
	}
	// The agent's branch is its clone's alone: the user's repository
	// never sees it.
	if _, err := gitOut(repo, "rev-parse", "--verify", "-q", "refs/heads/agent-branch"); err == nil {
		t.Error("the agent's branch is in the user's repository")
	}
	// Prepare detaches again and drops the clone's refs.
	dir2, _, err := w.Prepare(ctx, "a#1")
	if err != nil || dir2 != dir {
		t.Fatal(dir2, err)
	}
	if _, err := gitOut(dir, "symbolic-ref", "-q", "HEAD"); err == nil {
		t.Error("worktree still on a branch after Prepare")
	}
	if _, err := gitOut(dir, "rev-parse", "--verify", "-q", "refs/heads/agent-branch"); err == nil {
		t.Error("Prepare kept the agent's branch in the clone")
	}
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); err == nil {
		t.Error("Prepare left the agent's file")
	}
}

func TestChangeWithRebaseInProgress(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	g(t, dir, "checkout", "-q", "-b", "side")
	write(t, dir, "src/a.go", "package a\n// side\n")
	g(t, dir, "commit", "-qam", "side")
	g(t, dir, "checkout", "-q", "--detach", base)
	write(t, dir, "src/a.go", "package a\n// other\n")
	g(t, dir, "commit", "-qam", "other")
	if _, err := gitOut(dir, "rebase", "side"); err == nil {
		t.Fatal("rebase should stop on a conflict")
	}
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(ch); got != "M src/a.go" {
		t.Errorf("got %s", got)
	}
	if !strings.Contains(read(t, dir, "src/a.go"), "<<<<<<<") {
		t.Error("expected conflict markers in the working file")
	}
	// Prepare drops the rebase.
	if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
		t.Fatal(err)
	}
	gd := g(t, dir, "rev-parse", "--git-dir")
	if _, err := os.Stat(filepath.Join(dir, gd, "rebase-merge")); err == nil {
		t.Error("rebase state left")
	}
	if out := g(t, dir, "status", "--porcelain"); out != "" {
		t.Errorf("worktree not clean: %s", out)
	}
}

func TestViolations(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, _, _ := w.Prepare(ctx, "a#1")
	os.Symlink("/etc/passwd", filepath.Join(dir, "src/abs-link"))
	os.Symlink("../../outside", filepath.Join(dir, "src/up-link"))
	os.Symlink("a.go", filepath.Join(dir, "src/ok-link"))
	os.Symlink("../.git/config", filepath.Join(dir, "src/git-link"))
	ch := &muster.Change{Files: []muster.FileChange{
		{Status: "M", Path: "src/a.go"},
		{Status: "A", Path: "src/deep/x_test.go"},
		{Status: "A", Path: "docs/guide.txt"},
		{Status: "R", OldPath: "docs/old.md", Path: "src/moved.md"},
		{Status: "A", Path: "../escape.go"},
		{Status: "A", Path: "/abs.go"},
		{Status: "A", Path: "src/../src/a.go"},
		{Status: "A", Path: "src/abs-link"},
		{Status: "A", Path: "src/up-link"},
		{Status: "A", Path: "src/ok-link"},
		{Status: "A", Path: "src/git-link"},
		{Status: "M", Path: "muster.toml"},
		{Status: "A", Path: ".muster/state"},
	}}
	cases := []struct {
		name string
		owns []string
		want []string
	}{
		{"directory", []string{"src/"}, []string{"docs/guide.txt", "docs/old.md", "../escape.go", "/abs.go", "src/../src/a.go", "src/abs-link", "src/up-link", "src/git-link", "muster.toml", ".muster/state"}},
		{"globs", []string{"src/*.go", "src/**/*_test.go", "docs/*"}, []string{"src/moved.md", "../escape.go", "/abs.go", "src/../src/a.go", "src/abs-link", "src/up-link", "src/ok-link", "src/git-link", "muster.toml", ".muster/state"}},
		{"no owns", nil, []string{"../escape.go", "/abs.go", "src/../src/a.go", "src/abs-link", "src/up-link", "src/git-link", "muster.toml", ".muster/state"}},
		{"owns cannot grant muster files", []string{"muster.toml", ".muster/", "src/", "docs/"}, []string{"../escape.go", "/abs.go", "src/../src/a.go", "src/abs-link", "src/up-link", "src/git-link", "muster.toml", ".muster/state"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := w.Violations(ctx, dir, ch, tc.owns)
			if !slices.Equal(got, tc.want) {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestRevert(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	write(t, dir, "src/a.go", "changed\n")
	write(t, dir, "other/new.txt", "new\n")
	write(t, dir, "src/keep.go", "package a\n")
	os.Remove(filepath.Join(dir, "docs/guide.txt"))
	os.Symlink("/etc", filepath.Join(dir, "README.md.link"))
	ch, _ := w.Change(ctx, dir, base)
	bad := w.Violations(ctx, dir, ch, []string{"src/"})
	if want := []string{"README.md.link", "docs/guide.txt", "other/new.txt"}; !slices.Equal(sorted(bad), want) {
		t.Fatalf("violations %q, want %q", bad, want)
	}
	if err := w.Revert(ctx, dir, base, bad); err != nil {
		t.Fatal(err)
	}
	ch, _ = w.Change(ctx, dir, base)
	if got := render(ch); got != "A src/keep.go; M src/a.go" {
		t.Errorf("after revert: %s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		t.Error("empty directory left")
	}
	if err := w.Revert(ctx, dir, base, []string{"../x"}); err == nil {
		t.Error("revert accepted ../x")
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// A backslash is a legal character of a file name: a path that holds one
// is neither a violation without Owns nor refused by Revert.
func TestBackslashInName(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	write(t, dir, `back\slash.txt`, "x\n")
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(ch); got != `A back\slash.txt` {
		t.Fatalf("change: %s", got)
	}
	if bad := w.Violations(ctx, dir, ch, nil); len(bad) != 0 {
		t.Fatalf("violations without Owns: %q", bad)
	}
	bad := w.Violations(ctx, dir, ch, []string{"src/"})
	if !slices.Equal(bad, []string{`back\slash.txt`}) {
		t.Fatalf("violations with Owns src/: %q", bad)
	}
	if err := w.Revert(ctx, dir, base, bad); err != nil {
		t.Fatal(err)
	}
	if ch, _ = w.Change(ctx, dir, base); !ch.Empty() {
		t.Errorf("after revert: %s", render(ch))
	}
}

// TestDiffComputedWithTheChange: the patch Change computes along with the
// raw records (one diff-tree) is what `git diff -M` of base and the
// change's tree prints, for every kind of change.
func TestDiffComputedWithTheChange(t *testing.T) {
	files := map[string]string{"a.txt": "hello\nworld\n", "sp ace.txt": "b\n", "gone.txt": "bye\n", "bin.dat": "\x00\x01bin"}
	var big strings.Builder
	for i := 0; i < 50; i++ {
		big.WriteString("line\n")
	}
	files["big.txt"] = big.String()
	repo := newRepo(t, files)
	w := open(t, repo, "r1")
	dir, base, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "a.txt", "changed\n")
	write(t, dir, "bin.dat", "\x00\x02bin")
	write(t, dir, "tab\tname.txt", "new\n")
	os.Remove(filepath.Join(dir, "gone.txt"))
	if err := os.Rename(filepath.Join(dir, "big.txt"), filepath.Join(dir, "moved.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "sp ace.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(ch); !strings.Contains(got, "R big.txt->moved.txt") {
		t.Errorf("change %q", got)
	}
	diff, err := w.Diff(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	want := g(t, repo, "diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv", base, w.slots["a#1"].snap.tree, "--")
	if !w.slots["a#1"].snap.hasPatch || !strings.Contains(diff, "Binary files") {
		t.Errorf("Diff was not computed with the change:\n%s", diff)
	}
	if strings.TrimRight(diff, "\n") != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", diff, want)
	}
}

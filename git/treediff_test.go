package git

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiffNamesIsDiffTree: the paths the object reader finds differing
// between two trees are those `diff-tree -r --no-renames --name-only`
// lists, whatever changed: files added, removed, modified, made
// executable, made symlinks, a file become a directory and the reverse,
// directories added and removed whole.
func TestDiffNamesIsDiffTree(t *testing.T) {
	repo := newRepo(t, map[string]string{
		"a.txt": "a\n", "x/y.txt": "y\n", "x/z/deep.txt": "deep\n", "f": "file\n",
		"d/one.txt": "1\n", "d/two.txt": "2\n", "same/s.txt": "s\n", "mode.sh": "echo\n", "l": "target\n",
	})
	w := open(t, repo, "r1")
	a := g(t, repo, "rev-parse", "HEAD")
	write(t, repo, "a.txt", "changed\n")
	write(t, repo, "x/z/deep.txt", "deeper\n")
	write(t, repo, "x/new/n.txt", "n\n")
	g(t, repo, "rm", "-q", "f", "d/one.txt", "d/two.txt")
	write(t, repo, "f/inside.txt", "now a dir\n")
	write(t, repo, "d", "now a file\n")
	if err := os.Chmod(filepath.Join(repo, "mode.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(repo, "l"))
	if err := os.Symlink("a.txt", filepath.Join(repo, "l")); err != nil {
		t.Fatal(err)
	}
	g(t, repo, "add", "-A")
	g(t, repo, "commit", "-qm", "b")
	b := g(t, repo, "rev-parse", "HEAD")
	tree := g(t, repo, "rev-parse", "HEAD^{tree}")
	for _, pair := range [][2]string{{a, b}, {b, a}, {a, a}, {tree, a}, {a, tree}} {
		got, err := w.diffNames(ctx, pair[0], pair[1], 1000)
		if err != nil {
			t.Fatal(err)
		}
		want := splitZ([]byte(g(t, repo, "diff-tree", "-r", "-z", "--no-renames", "--name-only", pair[0], pair[1])))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s..%s: %q, diff-tree says %q", pair[0][:7], pair[1][:7], got, want)
		}
	}
	if _, err := w.diffNames(ctx, a, b, 3); !errors.Is(err, errManyPaths) {
		t.Errorf("over the bound: %v", err)
	}
	if _, err := w.diffNames(ctx, a, strings.Repeat("0", len(a)), 1000); err == nil {
		t.Error("a missing tree gave no error")
	}
}

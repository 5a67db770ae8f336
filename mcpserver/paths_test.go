package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInside(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"sub", "sub/deep", ".git", ".git/hooks"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, ".git/config"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"out":      outside,
		"dangling": filepath.Join(outside, "nothing"),
		"in.md":    filepath.Join(root, "sub"),
		"rel":      "sub",
		// In-repository links to git's directory (issue 21, item 11): a
		// lexical check lets them through.
		"gitdir":    ".git",
		"hooks":     ".git/hooks",
		"sub/cfg":   "../.git/config",
		"sub/abs":   filepath.Join(root, ".git"),
		"upper.GIT": ".git",
	} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ path, err string }{
		{"plan.md", ""},
		{"sub/deep/plan.md", ""},
		{"new/dir/plan.md", ""},
		{filepath.Join(root, "sub", "p.md"), ""},
		{"rel/p.md", ""},
		{"in.md", ""},
		{"", "empty"},
		{"a\x00b", "NUL"},
		{"../x.md", `".."`},
		{"sub/../../x.md", `".."`},
		{filepath.Join(outside, "x.md"), "outside the repository"},
		{"/etc/passwd", "outside the repository"},
		{"out/x.md", "outside the repository"},
		{"out", "symlink that leads outside"},
		{"dangling", "symlink that leads outside"},
		{"dangling/x.md", "symlink to nothing"},
		{".git/hooks/pre-commit", ".git"},
		{"sub/.git/config", ".git"},
		{"sub/.GIT/config", ".git"},
		{"gitdir/config", ".git"},
		{"gitdir/hooks/pre-commit", ".git"},
		{"hooks/pre-commit", ".git"},
		{"hooks", ".git"},
		{"sub/cfg", ".git"},
		{"sub/abs/config", ".git"},
		{"upper.GIT/x", ".git"},
		// The repository itself is no file; it went out through its
		// parent and was told "leads outside ... (through a symlink)".
		{".", "the repository itself"},
		{root, "the repository itself"},
		{"sub/..", `".."`},
	} {
		got, err := Inside(root, c.path)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.path, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: got %q, %v; want an error with %q", c.path, got, err, c.err)
		case err == nil && !filepath.IsAbs(got):
			t.Errorf("%q: %q is not absolute", c.path, got)
		}
	}
}

// TestInsideRefusesAHugePathByItsLength: a path longer than PATH_MAX is
// refused with its length, at once: it was echoed back whole, and a
// deep one was walked up one directory at a time (a megabyte of "a/"
// kept the server busy for minutes).
func TestInsideRefusesAHugePathByItsLength(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{strings.Repeat("a/", 3000) + "plan.md", strings.Repeat("x", maxPath+1)} {
		_, err := Inside(root, p)
		if err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), "at most 4096") {
			t.Fatalf("Inside(%d bytes) = %.300v", len(p), err)
		}
	}
	if _, err := Inside(root, strings.Repeat("d/", (maxPath-8)/2)+"plan.md"); err != nil && strings.Contains(err.Error(), "at most") {
		t.Fatalf("a path of %d bytes was refused by its length", maxPath)
	}
}

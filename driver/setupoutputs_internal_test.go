package driver

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/muster-run/muster"
)

// TestSetupOutputsBoundOnlyWhereReal: the setup outputs a coder sees
// read-only are the real directories in its clone; an output that is (or
// lies under) a symbolic link an agent or the repository planted is not
// bound, so it cannot bring a hidden path back into the sandbox; nor is
// one outside the clone, a missing one, or cargo's target/.
func TestSetupOutputsBoundOnlyWhereReal(t *testing.T) {
	dir := t.TempDir()
	secret := t.TempDir()
	for _, d := range []string{"node_modules", ".venv/lib", "target", "real"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "viaLink")); err != nil {
		t.Fatal(err)
	}
	steps := []muster.SetupStep{
		{Name: "npm", Outputs: []string{"node_modules/"}},
		{Name: "py", Outputs: []string{".venv/", "linked/", "viaLink/sub", "missing/", "../escape", "target/"}},
	}
	root, _ := filepath.EvalSymlinks(dir)
	got := setupOutputs(steps, dir)
	want := []string{filepath.Join(root, "node_modules"), filepath.Join(root, ".venv")}
	if !slices.Equal(got, want) {
		t.Errorf("setupOutputs = %q, want %q", got, want)
	}
}

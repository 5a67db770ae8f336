package gate

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClearJUnitStaysInTheClone: an agent makes the directory a gate's
// junit glob names (reports/) a link to a directory of the user's that
// holds XML files. Clearing the previous run's reports before the gate
// runs removes nothing there: only regular files inside the clone.
func TestClearJUnitStaysInTheClone(t *testing.T) {
	dir, user := t.TempDir(), t.TempDir()
	mine := filepath.Join(user, "results.xml")
	if err := os.WriteFile(mine, []byte("<testsuite/>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(user, filepath.Join(dir, "reports")); err != nil {
		t.Fatal(err)
	}
	clearJUnit(dir, "reports/*.xml")
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("clearing the reports followed the agent's link: %v", err)
	}
	// The clone's own old report is removed.
	own := filepath.Join(dir, "out", "old.xml")
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte("<testsuite/>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	clearJUnit(dir, "out/*.xml")
	if _, err := os.Stat(own); err == nil {
		t.Error("the clone's old report was left")
	}
}

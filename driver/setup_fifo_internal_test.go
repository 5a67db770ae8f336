package driver

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// TestSetupKeyFollowsNoAgentFile: setup's inputs are hashed in a clone
// an agent wrote. A FIFO planted at an input must not block muster (the
// open would wait for a writer for ever), and a link must not be read
// through (to /dev/zero it never ends; to a secret it is read by muster).
func TestSetupKeyFollowsNoAgentFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "package-lock.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "go.sum")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := setupKey(dir, muster.SetupStep{Name: "deps", Command: "true", Inputs: []string{"package-lock.json", "go.sum", "go.mod"}})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("setupKey: %v", err)
		}
	case <-time.After(20 * time.Second):
		// Unblock it (a writer opens the FIFO) so the test ends.
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("setupKey blocked on a FIFO (or read /dev/zero through a link) planted at an input")
	}
}

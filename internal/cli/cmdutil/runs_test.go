package cmdutil

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// A signal during setup cuts git short: the message says the run was
// interrupted, not that the directory is no repository.
func TestOpenRepoInterruptedIsNotNoRepository(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	if _, err := OpenRepo(context.Background(), dir); err != nil {
		t.Fatalf("open a repository: %v", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(muster.ErrInterrupted)
	_, err := OpenRepo(ctx, dir)
	if err == nil {
		t.Skip("git finished before the cancelled context stopped it")
	}
	if strings.Contains(err.Error(), "not inside a git repository") || !strings.Contains(err.Error(), muster.ErrInterrupted.Error()) {
		t.Fatalf("got %q, want an interruption", err)
	}
}

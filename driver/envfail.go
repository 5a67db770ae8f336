package driver

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/muster-run/muster"
)

// envError is a failure of the environment that no task can fix and no
// task is charged for: the run stops (exit 3, resumable) with one
// sentence naming the cause and what to do, and the raw error as detail.
type envError struct {
	cause string
	err   error
}

func (e *envError) Error() string {
	return e.cause + " (detail: " + bound(oneLine(e.err.Error()), 400) + ")"
}

func (e *envError) Unwrap() error { return e.err }

// classifyEnv returns the environment error err is, or nil: a full disk
// or quota, the clone's worktree dir gone, a git lock held by another
// process past git's own retries.
func classifyEnv(err error, dir string) *envError {
	if err == nil {
		return nil
	}
	var ee *envError
	if errors.As(err, &ee) {
		return ee
	}
	if env := diskFull(err); env != nil {
		return env
	}
	msg := err.Error()
	switch {
	case dir != "" && !exists(dir):
		return &envError{fmt.Sprintf("the clone's worktree %s vanished (removed by something outside muster): run muster resume, which prepares it again", dir), err}
	case strings.Contains(msg, ".lock': File exists") || strings.Contains(msg, "cannot lock ref") || strings.Contains(msg, "Unable to create") && strings.Contains(msg, ".lock"):
		return &envError{"a git lock is held by another process: wait for it to finish (or remove a stale .lock file it left), then run muster resume", err}
	}
	return nil
}

// diskFull returns the environment error of a full disk or quota, or nil.
func diskFull(err error) *envError {
	msg := err.Error()
	switch {
	case errors.Is(err, syscall.ENOSPC) || strings.Contains(msg, "No space left on device"):
		return &envError{"the disk is full: free some space, then run muster resume", err}
	case errors.Is(err, syscall.EDQUOT) || strings.Contains(msg, "Disk quota exceeded"):
		return &envError{"the disk quota is exceeded: free some space, then run muster resume", err}
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// opFailed ends an attempt whose step what ("integrate the change onto the
// run branch") failed with err: an environment error stops the run
// without charging the task; any other is the task's failure with a
// sentence that says it is not the agent's doing, and the raw error.
func (w *worker) opFailed(what string, err error, retry bool) []muster.Event {
	if env := classifyEnv(err, w.dir); env != nil {
		return w.stopRun(env)
	}
	return w.fail(fmt.Sprintf("muster could not %s, an error of muster or git rather than of the agent's work: check the detail, then run muster resume (detail: %s)",
		what, bound(oneLine(err.Error()), 400)), retry)
}

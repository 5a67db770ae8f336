// Package git is muster's Workspace over the git binary: the run branch
// muster/<run-id>, a pool of reused worktrees (one per executor clone)
// under the repository's git directory, change computation against a
// task's base with a private index, and integration onto the run branch
// with plumbing only (merge-tree, commit-tree, update-ref). It never
// touches the user's work tree, index, HEAD or branches, except in
// FastForward, which the user asks for with --merge.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// GitError is a git command that exited with a non-zero status.
type GitError struct {
	Args     []string // the arguments after "git"
	ExitCode int
	Stderr   string
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if len(msg) > 2000 {
		msg = msg[:2000] + "..."
	}
	s := fmt.Sprintf("git %s: exit status %d", strings.Join(e.Args, " "), e.ExitCode)
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// lockContention reports whether git failed because another process held
// a lock file (index.lock, a ref lock).
func (e *GitError) lockContention() bool {
	return strings.Contains(e.Stderr, ".lock': File exists") ||
		strings.Contains(e.Stderr, ".lock': file exists")
}

// ErrNoGit is returned when the git binary cannot be found.
var ErrNoGit = errors.New("git not found in PATH")

// envDrop lists variables that would redirect git away from the
// repository we name explicitly (they are set inside git hooks).
var envDrop = map[string]bool{
	"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true,
	"GIT_OBJECT_DIRECTORY": true, "GIT_ALTERNATE_OBJECT_DIRECTORIES": true,
	"GIT_COMMON_DIR": true, "GIT_PREFIX": true, "GIT_NAMESPACE": true,
	"GIT_CEILING_DIRECTORIES": true, "GIT_DISCOVERY_ACROSS_FILESYSTEM": true,
	"GIT_LITERAL_PATHSPECS": true, "GIT_GLOB_PATHSPECS": true,
	"GIT_NOGLOB_PATHSPECS": true, "GIT_ICASE_PATHSPECS": true,
	"GIT_QUARANTINE_PATH": true, "GIT_REFLOG_ACTION": true,
	"LC_ALL": true, "LANG": true, "LANGUAGE": true,
}

// baseEnv is the environment every git call starts from, read once at
// the first call.
var baseEnv = sync.OnceValue(func() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if envDrop[k] {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_TERMINAL_PROMPT=0", // never ask for credentials
		"GIT_EDITOR=true",       // never open an editor
		"LC_ALL=C",              // stable messages to match
	)
})

// cmd is one git invocation.
type cmd struct {
	dir      string   // working directory ("" = current)
	args     []string // after "git" and the global options
	env      []string // extra KEY=VALUE
	stdin    []byte
	readOnly bool // adds --no-optional-locks
	paths    bool // adds --literal-pathspecs
	hooks    bool // keeps the user's hooks (only for calls in the user's work tree)
}

// gitArgs returns the full argument list after "git".
func (c *cmd) gitArgs() []string {
	a := []string{"-c", "gc.auto=0", "-c", "maintenance.auto=false"}
	if !c.hooks {
		a = append(a, "-c", "core.hooksPath=/dev/null")
	}
	if c.readOnly {
		a = append(a, "--no-optional-locks")
	}
	if c.paths {
		a = append(a, "--literal-pathspecs")
	}
	return append(a, c.args...)
}

// retries bounds how often a call that met a held lock is tried again.
const retries = 6

// run executes c and returns its standard output. A call that fails
// because another process holds a lock is retried with a short backoff.
// On cancellation git gets SIGTERM first so that it removes its lock
// files, then SIGKILL after a grace period.
func run(ctx context.Context, c cmd) ([]byte, error) {
	delay := 10 * time.Millisecond
	for attempt := 0; ; attempt++ {
		out, err := runOnce(ctx, c)
		var ge *GitError
		if err == nil || !errors.As(err, &ge) || !ge.lockContention() || attempt >= retries {
			return out, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, err
		case <-t.C:
		}
		delay *= 2
	}
}

func runOnce(ctx context.Context, c cmd) ([]byte, error) {
	args := c.gitArgs()
	x := exec.CommandContext(ctx, "git", args...)
	x.Dir = c.dir
	x.Env = append(append([]string(nil), baseEnv()...), c.env...)
	x.Cancel = func() error { return x.Process.Signal(syscall.SIGTERM) }
	x.WaitDelay = 3 * time.Second
	if c.stdin != nil {
		x.Stdin = bytes.NewReader(c.stdin)
	}
	var stdout, stderr bytes.Buffer
	x.Stdout = &stdout
	x.Stderr = &stderr
	err := x.Run()
	if n, ok := ctx.Value(cpuKey{}).(*atomic.Int64); ok && x.ProcessState != nil {
		n.Add(int64(x.ProcessState.UserTime() + x.ProcessState.SystemTime()))
	}
	if err == nil {
		return stdout.Bytes(), nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		return nil, ErrNoGit
	}
	if ctx.Err() != nil {
		return stdout.Bytes(), fmt.Errorf("git %s: %w", strings.Join(c.args, " "), context.Cause(ctx))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return stdout.Bytes(), &GitError{Args: c.args, ExitCode: ee.ExitCode(), Stderr: stderr.String()}
	}
	return stdout.Bytes(), fmt.Errorf("git %s: %w", strings.Join(c.args, " "), err)
}

// cpuKey keys a *atomic.Int64 in a context: git's CPU time (user and
// system, in nanoseconds) of every call made with that context is added
// to it. Benchmarks use it to measure work apart from machine load.
type cpuKey struct{}

// WithCPUCounter returns a context under which the CPU time of every git
// call is added to n.
func WithCPUCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, cpuKey{}, n)
}

// line runs c and returns its output with the trailing newline removed.
func line(ctx context.Context, c cmd) (string, error) {
	out, err := run(ctx, c)
	return strings.TrimRight(string(out), "\n"), err
}

// exitCode returns the exit status of a *GitError in err, or -1.
func exitCode(err error) int {
	var ge *GitError
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

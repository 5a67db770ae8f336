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
	"path/filepath"
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

// Error names the command, its exit status and what git printed.
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
	// Config, attributes and programs that do not come from the
	// repository's own files: muster sets what it needs itself.
	"GIT_CONFIG": true, "GIT_CONFIG_PARAMETERS": true, "GIT_CONFIG_COUNT": true,
	"GIT_EXTERNAL_DIFF": true, "GIT_DIFF_OPTS": true, "GIT_ATTR_SOURCE": true,
	"GIT_INDEX_VERSION": true, "GIT_TEMPLATE_DIR": true, "GIT_DEFAULT_HASH": true,
	"GIT_OPTIONAL_LOCKS": true, "GIT_SHALLOW_FILE": true, "GIT_REPLACE_REF_BASE": true,
	"GIT_GRAFT_FILE": true, "GIT_NO_REPLACE_OBJECTS": true, "GIT_PAGER": true,
}

// baseEnv is the environment every git call starts from, read once at
// the first call.
var baseEnv = sync.OnceValue(func() []string { return gitEnv(os.Environ()) })

// gitEnv is baseEnv made of environ. A relative HOME or XDG_CONFIG_HOME
// is made absolute against muster's own directory (dropped when it
// cannot be): git would take it relative to the directory it runs in, a
// clone, where the agent could plant the excludes file or the config it
// names.
func gitEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if envDrop[k] || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_") {
			continue
		}
		if (k == "HOME" || k == "XDG_CONFIG_HOME") && v != "" && !filepath.IsAbs(v) {
			abs, err := filepath.Abs(v)
			if err != nil {
				continue
			}
			kv = k + "=" + abs
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_TERMINAL_PROMPT=0", // never ask for credentials
		"GIT_EDITOR=true",       // never open an editor
		"LC_ALL=C",              // stable messages to match
		"GIT_PAGER=cat",
		// Replace refs would let a ref in the user's repository change
		// what muster reads as a commit.
		"GIT_NO_REPLACE_OBJECTS=1",
	)
}

// ownEnv is added to calls in muster's own git directories (the clones'
// private ones and the integration one, in the cache): only muster's
// config file counts there, no system or global config and no system
// attributes, so no filter, merge or diff driver, fsmonitor or hook that
// a config names can run.
var ownEnv = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_ATTR_NOSYSTEM=1"}

// ownArgs are the config overrides of calls in muster's own git
// directories, on top of those of every call.
var ownArgs = []string{
	"-c", "core.attributesFile=" + os.DevNull,
	"-c", "merge.renormalize=false",
	"-c", "protocol.allow=never",
	"-c", "submodule.recurse=false",
	"-c", "core.useReplaceRefs=false",
}

// cmd is one git invocation.
type cmd struct {
	dir      string   // working directory ("" = current)
	args     []string // after "git" and the global options
	env      []string // extra KEY=VALUE
	stdin    []byte
	readOnly bool // adds --no-optional-locks
	paths    bool // adds --literal-pathspecs
	hooks    bool // keeps the user's hooks (only for calls in the user's work tree)
	// own: the call runs in one of muster's own git directories (ownEnv,
	// ownArgs); pre are more -c pairs of muster's (carried settings).
	own bool
	pre []string
}

// gitArgs returns the full argument list after "git".
func (c *cmd) gitArgs() []string {
	// Never a program or daemon the repository's config names: no hooks
	// (but for --merge in the user's own tree), no fsmonitor, no
	// automatic gc or maintenance.
	a := []string{"-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "core.fsmonitor=false"}
	if !c.hooks {
		a = append(a, "-c", "core.hooksPath="+os.DevNull)
	}
	if c.own {
		a = append(a, ownArgs...)
		a = append(a, c.pre...)
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
	x.Env = append([]string(nil), baseEnv()...)
	if c.own {
		x.Env = append(x.Env, ownEnv...)
	}
	x.Env = append(x.Env, c.env...)
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

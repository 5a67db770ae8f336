package driver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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

// gateEnvSign is one sign in a gate's output that the gate could not run
// at all: a program or a package its toolchain needs is not installed in
// the clone. piece extracts the missing piece from the line; what names
// it for the message, and hint says how it gets installed.
type gateEnvSign struct {
	sign  string
	piece func() *regexp.Regexp
	what  string
	hint  string
	// local says whether a missing piece is the project's own (a
	// relative import): then it is the change's doing, not the clone's.
	local func(piece, dir string) bool
}

// gateEnvSigns is the one table of environment failures in a gate's
// output, per toolchain. Exit statuses 126 and 127 (the shell could not
// execute or find the program) are environment failures whatever the
// output says.
var gateEnvSigns = []gateEnvSign{
	{"command not found", lazyRegexp(`([^\s:]+): command not found`), "a program",
		"install it (or add the [setup] command that does)", nil},
	{"Cannot find module", lazyRegexp(`Cannot find module '([^']+)'`), "a Node module",
		"install the project's dependencies in every clone: [setup] = [\"npm ci\"]", nodeLocal},
	{"MODULE_NOT_FOUND", lazyRegexp(`Cannot find (?:module|package) '([^']+)'`), "a Node module",
		"install the project's dependencies in every clone: [setup] = [\"npm ci\"]", nodeLocal},
	{"ModuleNotFoundError", lazyRegexp(`No module named '?([\w.]+)'?`), "a Python module",
		"install it for the gate's interpreter (or add the [setup] command that does)", pythonLocal},
	{"No module named", lazyRegexp(`No module named '?([\w.]+)'?`), "a Python module",
		"install it for the gate's interpreter (or add the [setup] command that does)", pythonLocal},
	{"failed to initialize build cache", lazyRegexp(`failed to initialize build cache at (\S+):`), "a writable Go build cache",
		"let gates write it: [run] writable = [\"<that directory>\"] (muster init writes it)", nil},
	{"no required module provides package", lazyRegexp(`no required module provides package ([^\s;]+)`), "a Go module",
		"download the modules: [setup] = [\"go mod download\"]", nil},
}

// lazyRegexp compiles expr on first use, not when muster starts (every
// confined start of an agent or a gate runs this package's
// initialisation: see cmd/muster).
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// nodeLocal says whether a missing Node module is a path of the
// project's (./x, ../x, /abs/x): a missing file of the change.
func nodeLocal(piece, _ string) bool {
	return strings.HasPrefix(piece, ".") || strings.HasPrefix(piece, "/")
}

// pythonLocal says whether a missing Python module's top-level package
// is the project's own (a directory or file at the top of the clone or
// under src/).
func pythonLocal(piece, dir string) bool {
	if dir == "" {
		return false
	}
	top, _, _ := strings.Cut(piece, ".")
	for _, p := range []string{top, top + ".py", filepath.Join("src", top)} {
		if exists(filepath.Join(dir, p)) {
			return true
		}
	}
	return false
}

// gateEnv says, in one sentence, why a failing gate could not run at all,
// or "". hard is set for exit 126 and 127, which no baseline can explain
// away; dir is the worktree the gate ran in ("" when unknown), where a
// missing module may be the project's own.
func gateEnv(g muster.GateSpec, r muster.GateResult, dir string) (why string, hard bool) {
	if r.Passed {
		return "", false
	}
	if len(r.Blocked) > 0 {
		// It failed after muster's proxy refused it a host: the network
		// policy's doing, not the change's (docs/security.md).
		return "environment error: " + muster.BlockedReason("gate "+g.Name, r.Blocked, "[gates]") + "; then run muster resume", true
	}
	switch r.ExitCode {
	case 127:
		return fmt.Sprintf("environment error: gate %s (%s) could not run, command not found (exit 127): %s; install it or fix the gate, then run muster resume",
			g.Name, g.Command, strings.TrimSpace(lastLines(r.Output, 1))), true
	case 126:
		return fmt.Sprintf("environment error: gate %s (%s) could not run, a program is not executable (exit 126): %s; fix its permissions or the gate, then run muster resume",
			g.Name, g.Command, strings.TrimSpace(lastLines(r.Output, 1))), true
	}
	for _, s := range gateEnvSigns {
		if !strings.Contains(r.Output, s.sign) {
			continue
		}
		piece := ""
		if m := s.piece().FindStringSubmatch(r.Output); m != nil {
			piece = m[1]
		}
		if piece != "" && s.local != nil && s.local(piece, dir) {
			continue
		}
		missing := s.what
		if piece != "" {
			missing += " is missing: " + piece
		} else {
			missing += " is missing (" + s.sign + ")"
		}
		return fmt.Sprintf("environment error: gate %s (%s) could not run, %s; %s, then run muster resume", g.Name, g.Command, missing, s.hint), false
	}
	return "", false
}

// authFailed is the environment error of a credential the provider
// refused (401/403, "invalid API key", "not logged in"): no task can fix
// it and every task on it would fail the same way, so the run stops
// (exit 3, resumable) with one message naming the executor and the
// variable to check, and the provider's text once.
func (w *worker) authFailed(ae *muster.AgentError) *envError {
	what := "its kind's API key variable, or log in again (muster doctor says which)"
	if s := w.cfg.Executor(w.a.Executor); s != nil && s.APIKeyEnv != "" {
		what = s.APIKeyEnv + " (its api_key_env)"
	}
	text := bound(oneLine(w.d.red().String(ae.Message)), 200)
	return &envError{cause: fmt.Sprintf("environment error: executor %s's credential was refused (%s): check %s, then run muster resume", w.a.Executor, text, what),
		err: errors.New("authentication failed")}
}

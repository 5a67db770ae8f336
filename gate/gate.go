// Package gate runs gate commands through sh -c inside a worktree, and
// Kind: code tasks, whose Run command is a deterministic step.
package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
	"github.com/muster-run/muster/internal/proc"
)

// MaxOutput bounds the output a gate keeps (its tail: failures are
// usually at the end).
const MaxOutput = 64 << 10

// DefaultTimeout applies when a gate has no timeout.
const DefaultTimeout = 10 * time.Minute

// Runner runs gates. The zero value is ready to use.
type Runner struct {
	// Grace is the SIGTERM-to-SIGKILL grace period (default 5 s).
	Grace time.Duration
	// Allow names variables that look like credentials but gates get
	// ([run] env_allow).
	Allow []string
	// Confine, when set, confines every gate: it may write its clone and
	// the paths Confine lists (nil: unconfined).
	Confine *muster.Confinement
	// Net, when set, opens each gate's network beyond its own loopback
	// (muster's proxy with Network's policy); the hosts it refused are
	// the result's Blocked.
	Net     muster.NetOpener
	Network muster.Network
	// BuildCache, when set, is the GOCACHE of confined gates, writable
	// to them (git.GatesCache: one per repository, which no agent may
	// write), instead of the user's.
	BuildCache string
	// TmpRoot, when set, holds a fresh TMPDIR per gate run (made there,
	// writable to that run alone, removed after it).
	TmpRoot string
}

// Run runs one gate in dir.
func (r Runner) Run(ctx context.Context, dir string, g muster.GateSpec, timeout time.Duration) muster.GateResult {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	grace := r.Grace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	out := newTail(MaxOutput)
	clearJUnit(dir, g.JUnit)
	env := proc.Environ(r.Allow...)
	conf := r.Confine.With(dir)
	var blocked func() []string
	if r.Net != nil {
		ns, err := r.Net(r.Network)
		if err != nil {
			return muster.GateResult{Name: g.Name, Command: g.Command, ExitCode: -1, Output: "gate network: " + err.Error()}
		}
		env = withEnv(env, ns.Env)
		blocked = ns.Close
		if conf != nil && conf.Namespaces && r.Network.Policy != muster.NetOpen && ns.Bridge != nil {
			// A network of its own: its loopback and muster's proxy.
			conf = conf.WithBridge(ns.Bridge)
			conf.HostNetwork = false
		}
	}
	confine := conf
	if conf != nil && r.BuildCache != "" {
		// The gates' own Go build cache (ARCHITECTURE §8.5): never the
		// one agents may write, whose forged entry would pass a test
		// that was never run.
		env, confine = withEnv(env, map[string]string{"GOCACHE": r.BuildCache}), confine.With(r.BuildCache)
	}
	if r.TmpRoot != "" {
		tmp, err := exchange.NewHome(r.TmpRoot, "gate-tmp")
		if err != nil {
			return muster.GateResult{Name: g.Name, Command: g.Command, ExitCode: -1, Output: "gate TMPDIR: " + err.Error()}
		}
		defer os.RemoveAll(tmp)
		env, confine = withEnv(env, map[string]string{"TMPDIR": tmp}), confine.With(tmp)
	}
	res, err := proc.Run(ctx, proc.Spec{
		Argv:     []string{"sh", "-c", g.Command},
		Dir:      dir,
		Env:      env,
		Confine:  confine,
		Timeout:  timeout,
		Grace:    grace,
		OnLine:   out.line,
		OnStderr: out.line,
	})
	var pe *muster.PanicError
	if errors.As(err, &pe) {
		panic(pe) // on the caller's goroutine, which recovers it into a clean stop
	}
	gr := muster.GateResult{Name: g.Name, Command: g.Command, ExitCode: res.ExitCode, Duration: res.Duration}
	switch {
	case err != nil:
		gr.ExitCode = -1
		gr.Output = err.Error()
	case res.Stopped == "timeout":
		gr.Output = out.String() + fmt.Sprintf("\n[gate timed out after %s]", timeout)
	case res.Stopped == "cancelled":
		gr.Output = out.String() + "\n[gate cancelled]"
	case res.Limit != "":
		gr.Output = out.String() + "\n[gate " + res.LimitReason(confine) + "]"
	default:
		gr.Output = out.String()
		gr.Passed = res.ExitCode == 0
	}
	gr.JUnit = readJUnit(dir, g.JUnit)
	if blocked != nil {
		gr.Blocked = blocked()
	}
	return gr
}

// withEnv returns env with the variables of set (replacing any there).
func withEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+set[k])
	}
	return out
}

// tail keeps the last n bytes of lines written to it.
type tail struct {
	mu  sync.Mutex
	n   int
	buf []string
	sz  int
	cut bool
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) line(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, s)
	t.sz += len(s) + 1
	for t.sz > t.n && len(t.buf) > 1 {
		t.sz -= len(t.buf[0]) + 1
		t.buf = t.buf[1:]
		t.cut = true
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.Join(t.buf, "\n")
	if t.cut {
		s = "[…output cut…]\n" + s
	}
	return s
}

// CodeExecutor runs a Kind: code task's Run command through sh -c in
// its worktree; the command's exit status is the attempt's.
type CodeExecutor struct{ Runner Runner }

// Execute runs req.Task.Run.
func (c CodeExecutor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	timeout := req.Timeout
	r := c.Runner.Run(ctx, req.Dir, muster.GateSpec{Name: string(req.Task.ID), Command: req.Task.Run}, timeout)
	emit(muster.Record{Type: muster.RecTool, Tool: "sh", Args: req.Task.Run})
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	res := &muster.ExecResult{ExitCode: r.ExitCode, Tail: lastBytes(r.Output, 4096)}
	if !r.Passed {
		return res, &muster.AgentError{Class: muster.FailExit, ExitCode: r.ExitCode, Message: fmt.Sprintf("run %q exited %d", req.Task.Run, r.ExitCode)}
	}
	return res, nil
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// ScratchFree says the executor needs no scratch directory.
func (CodeExecutor) ScratchFree() {}

// Package acp drives any Agent Client Protocol (v1) agent (executor kind
// "acp", with command = [...]) and the presets built on it (claude-acp,
// codex-acp, gemini-acp, qwen, copilot): one agent process per
// invocation, speaking JSON-RPC on its stdin and stdout. muster is the
// client: it opens a session in the worktree, sends the task's prompt,
// turns the agent's session updates into records, answers its permission
// requests from the task's authority, serves file reads and writes only
// inside the worktree, and terminals only with shell authority.
package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/acp"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/proc"
)

// Executor runs an ACP agent for one executor spec.
type Executor struct {
	base   *agentkit.Base
	preset *preset
	// Now tells the time for reset times (nil: time.Now).
	Now func() time.Time
}

// New returns an executor for spec: kind "acp" runs spec.Command; a
// preset kind runs its agent (spec.Command[0], when set, replaces the
// program).
func New(spec *muster.ExecutorSpec) (*Executor, error) {
	if spec == nil {
		return nil, errors.New("acp: no executor spec")
	}
	p := presets[spec.Kind]
	if p == nil {
		return nil, fmt.Errorf("executor %s: kind %q is not an ACP kind", spec.Name, spec.Kind)
	}
	if spec.Kind == muster.ExecACP && len(spec.Command) == 0 {
		return nil, fmt.Errorf("executor %s: kind acp needs command = [...] (the agent's program and arguments)", spec.Name)
	}
	b, err := agentkit.NewBase(spec, spec.Kind)
	if err != nil {
		return nil, err
	}
	return &Executor{base: b, preset: p}, nil
}

// exitedError is the connection's cause when the agent process ended.
type exitedError struct{ code int }

func (e *exitedError) Error() string { return fmt.Sprintf("the agent exited (status %d)", e.code) }

// Execute runs one invocation: start the agent, initialize, open or load
// the session, prompt, and stop the agent when the turn ends.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	s, err := e.base.Prepare(req)
	if err != nil {
		return nil, err
	}
	spec := e.base.SpecFor(req)
	root, err := filepath.EvalSymlinks(req.Dir)
	if err != nil {
		return nil, agentkit.StartFailure(fmt.Errorf("worktree: %w", err))
	}
	args := append(append([]string(nil), e.base.Kind.ACPArgs...), e.preset.args(spec, req)...)
	if spec.Kind == muster.ExecACP {
		args = append(append([]string(nil), spec.Command[1:]...), args...)
	}
	inv := s.Invocation(req, append(args, spec.Args...), e.preset.env(spec, req, s.Home, s.Key), nil)
	sess := newSession(req, root, emit, inv.Secrets, inv.Env)
	sess.home, sess.missingAsEmpty = s.Home, e.preset.missingAsEmpty
	if err := e.preset.prepare(spec, req, s.Home, s.KeyName); err != nil {
		return nil, agentkit.StartFailure(err)
	}

	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, agentkit.StartFailure(err)
	}
	defer stdinW.Close()
	sess.conn = acp.NewConn(stdinW, sess)
	// The process's own context: cancelled only after session/cancel had
	// its chance, or when the agent outstays the end of its turn.
	pctx, kill := context.WithCancel(context.Background())
	defer kill()
	stderr := &stderrTail{sess: sess}
	type outcome struct {
		res proc.Result
		err error
	}
	done := make(chan outcome, 1)
	pspec := proc.Spec{
		Argv: inv.Argv, Dir: inv.Dir, Env: inv.Env, Stdin: stdinR,
		Grace: req.Grace, Stall: req.Stall, Confine: req.Confine,
		OnStart: func(pid int) {
			stdinR.Close()
			sess.emitLocked(muster.Record{Type: muster.RecPID, PID: pid})
		},
		OnLine:   sess.line,
		OnStderr: stderr.add,
	}
	// Lives until the agent process has exited.
	go func() {
		res, err := proc.Run(pctx, pspec)
		stdinR.Close()
		cause := error(&exitedError{code: res.ExitCode})
		if err != nil {
			cause = err
		}
		sess.conn.Close(cause)
		sess.terms.closeAll()
		done <- outcome{res, err}
	}()

	timeout, grace := limits(req, spec)
	turn := sess.drive(ctx, e.preset, spec, timeout, grace)

	// The turn is over: EOF on stdin asks the agent to exit; one that
	// stays past the grace period is stopped with its process group.
	stdinW.Close()
	var out outcome
	select {
	case out = <-done:
	case <-time.After(grace):
		kill()
		out = <-done
	}
	if e.preset.after != nil {
		e.preset.after(s.Home)
	}
	return e.result(ctx, req, sess, turn, out.res, out.err, stderr.lines, timeout)
}

// limits are an invocation's timeout (the task's, else the executor's)
// and its grace period.
func limits(req *muster.ExecRequest, spec *muster.ExecutorSpec) (timeout, grace time.Duration) {
	timeout = req.Timeout
	if timeout == 0 {
		timeout = spec.Timeout
	}
	grace = req.Grace
	if grace <= 0 {
		grace = muster.DefaultGraceSeconds * time.Second
	}
	return timeout, grace
}

// stderrTail notes the agent's stderr lines and keeps the last ones,
// redacted, for the error message.
type stderrTail struct {
	sess  *session
	mu    sync.Mutex
	lines []string
}

func (t *stderrTail) add(line string) {
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	t.sess.note("stderr: " + agentkit.Clip(line, 500))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, t.sess.redact(agentkit.Clip(line, 500)))
	if len(t.lines) > 40 {
		t.lines = t.lines[len(t.lines)-20:]
	}
}

// result turns a finished turn and the process's end into the result or
// a classified error.
func (e *Executor) result(ctx context.Context, req *muster.ExecRequest, sess *session, turn turnResult, pr proc.Result, perr error, stderr []string, timeout time.Duration) (*muster.ExecResult, error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	st := sess.s
	sess.flushMessage()
	name := string(e.base.Kind.Name)
	res := &muster.ExecResult{ExitCode: pr.ExitCode, SessionID: st.SessionID, Tail: st.Tail()}
	if perr != nil {
		return nil, &muster.AgentError{Class: muster.FailStart, ExitCode: -1, Message: st.Redact(perr.Error())}
	}
	switch {
	case turn.cancelled:
		if c := context.Cause(ctx); c != nil {
			return res, c
		}
		return res, ctx.Err()
	case turn.timedOut:
		return res, &muster.AgentError{Class: muster.FailTimeout, ExitCode: pr.ExitCode,
			Message: fmt.Sprintf("%s ran past its timeout of %s; cancelled and stopped", name, timeout)}
	case pr.Stopped == "stall":
		return res, &muster.AgentError{Class: muster.FailStall, ExitCode: pr.ExitCode,
			Message: fmt.Sprintf("%s printed nothing for %s; killed", name, req.Stall)}
	case pr.Limit != "":
		return res, &muster.AgentError{Class: muster.FailExit, ExitCode: pr.ExitCode,
			Message: fmt.Sprintf("%s %s", name, pr.LimitReason(req.Confine))}
	case sess.flooded:
		return res, &muster.AgentError{Class: muster.FailMalformed, ExitCode: pr.ExitCode,
			Message: fmt.Sprintf("%s sent more than %d session updates; stopped", name, maxUpdates)}
	}
	if turn.err != nil {
		now := time.Now
		if e.Now != nil {
			now = e.Now
		}
		var rpc *acp.Error
		var exited *exitedError
		text := st.Redact(turn.err.Error())
		if len(stderr) > 0 {
			text = strings.TrimSpace(text + "\n" + strings.Join(stderr, "\n"))
		}
		ae := agentkit.Classify(0, pr.ExitCode, text, now())
		switch {
		case errors.As(turn.err, &rpc) && rpc.Code == acp.CodeAuthRequired:
			ae.Class = muster.FailAuth
		case errors.As(turn.err, &exited) && ae.Class == muster.FailExit && pr.ExitCode == 0:
			ae.Class = muster.FailMalformed
		case turn.protocol:
			ae.Class = muster.FailMalformed
		}
		return res, ae
	}
	if p := e.preset.errorPrefix; p != "" && strings.HasPrefix(strings.TrimSpace(sess.last), p) {
		now := time.Now
		if e.Now != nil {
			now = e.Now
		}
		return res, agentkit.Classify(0, pr.ExitCode, st.Redact(strings.TrimSpace(sess.last)), now())
	}
	switch turn.stop {
	case acp.StopRefusal:
		return res, &muster.AgentError{Class: muster.FailExit, ExitCode: pr.ExitCode, Message: name + " refused the prompt (stop reason refusal)"}
	case acp.StopCancelled:
		// Not asked for: agents end their turn so when muster refuses a
		// permission (Codex does). The turn is over; its change is
		// checked as any other.
		st.Note(name + " ended its turn as cancelled")
	}
	if req.Role == muster.RoleReviewer {
		if f, ok := agentkit.ParseFindings(st.Final); ok {
			res.Reviewed, res.Findings = true, f
			st.Emit(muster.Record{Type: muster.RecFindings, Findings: f})
		}
	} else if agentkit.Satisfied(st.Final) {
		res.Satisfied = true
		st.Emit(muster.Record{Type: muster.RecSatisfied})
	}
	res.Final = st.Redact(st.Final)
	res.Tail = st.Tail()
	return res, nil
}

package agentkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/proc"
)

// Invocation is one agent process to run.
type Invocation struct {
	Kind  *Kind
	Argv  []string
	Env   []string
	Dir   string
	Stdin string // written to stdin, which is then closed; "": /dev/null
	// Secrets are values redacted from the tail and error messages.
	Secrets []string
	// Parse handles one stdout line that starts with "{"; an error means the
	// line is not the JSON the CLI should print.
	Parse func(line []byte, s *Stream) error
	// Now tells the time for reset times (nil: time.Now).
	Now func() time.Time
}

// Run runs the invocation under internal/proc (own process group, grace
// kill, timeout and stall from req), feeds stdout lines to inv.Parse, and
// turns the outcome into a result or a classified *muster.AgentError.
// Reviewers' findings and coders' satisfied statements are read from the
// final answer. The stream is returned for adapter-specific follow-up.
func Run(ctx context.Context, req *muster.ExecRequest, inv Invocation, emit func(muster.Record)) (*muster.ExecResult, *Stream, error) {
	s := NewStream(emit, inv.Secrets...)
	out := &outputs{s: s, parse: inv.Parse}
	spec := proc.Spec{
		Argv:     inv.Argv,
		Dir:      inv.Dir,
		Env:      inv.Env,
		Grace:    req.Grace,
		Stall:    req.Stall,
		Confine:  req.Confine,
		OnLine:   out.stdout,
		OnStderr: out.stderr,
	}
	if inv.Stdin != "" {
		spec.Stdin = strings.NewReader(inv.Stdin)
	}
	if emit != nil {
		// Before the readers start, so never concurrent with them: the
		// pid lets a resume kill what a crashed muster left running.
		spec.OnStart = func(pid int) { emit(muster.Record{Type: muster.RecPID, PID: pid}) }
	}
	spec.Timeout = req.Timeout
	if spec.Timeout == 0 && req.Spec != nil {
		spec.Timeout = req.Spec.Timeout
	}
	name := "agent"
	if inv.Kind != nil {
		name = string(inv.Kind.Name)
	}
	pr, err := proc.Run(ctx, spec)
	var pe *muster.PanicError
	if errors.As(err, &pe) {
		return nil, s, pe // a bug of muster's, not the agent's: the run stops
	}
	if err != nil {
		return nil, s, &muster.AgentError{Class: muster.FailStart, ExitCode: -1, Message: s.Redact(err.Error())}
	}
	res := &muster.ExecResult{ExitCode: pr.ExitCode, SessionID: s.SessionID}
	if err := stoppedError(ctx, pr, name, req.Stall, spec); err != nil {
		res.Tail = s.Tail()
		return res, s, err
	}
	if pr.ExitCode != 0 || s.Failed {
		res.Tail = s.Tail()
		return res, s, failure(s, out.lines, pr.ExitCode, name, inv.Now)
	}
	if !s.Done {
		res.Tail = s.Tail()
		return res, s, &muster.AgentError{Class: muster.FailMalformed, ExitCode: pr.ExitCode,
			Message: fmt.Sprintf("%s exited without its final event (%d events, %d undecodable lines)", name, s.Lines, s.Bad)}
	}
	finalAnswer(req.Role, s, res)
	return res, s, nil
}

// outputs reads an invocation's stdout and stderr lines into its stream.
// They are read by two goroutines; mu serialises their use of the
// stream, so records are never emitted concurrently.
type outputs struct {
	mu    sync.Mutex
	s     *Stream
	parse func(line []byte, s *Stream) error
	lines []string // stderr's last lines, clipped
}

// stdout hands a JSON line to the parser; other text is a note.
func (o *outputs) stdout(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, "{") {
		if t != "" {
			o.s.Note(t)
		}
		return
	}
	o.s.Lines++
	if err := o.parse([]byte(t), o.s); err != nil {
		o.s.Bad++
		o.s.Note(Clip(t, 300))
	}
}

// stderr notes a line and keeps the last ones for the error message.
func (o *outputs) stderr(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	line = strings.TrimSpace(line)
	if line == "" {
		return
	}
	o.s.Note("stderr: " + Clip(line, 500))
	o.lines = append(o.lines, Clip(line, 500))
	if len(o.lines) > 40 {
		o.lines = o.lines[len(o.lines)-20:]
	}
}

// failure classifies an invocation that exited non-zero or said it
// failed, from its error events and stderr.
func failure(s *Stream, stderr []string, exitCode int, name string, now func() time.Time) *muster.AgentError {
	if now == nil {
		now = time.Now
	}
	text := strings.Join(s.Errors, "\n")
	if len(stderr) > 0 {
		text = strings.TrimSpace(text + "\n" + strings.Join(stderr, "\n"))
	}
	if text == "" {
		text = fmt.Sprintf("%s exited with status %d", name, exitCode)
	}
	ae := Classify(s.Status, exitCode, s.Redact(text), now())
	if ae.Class == muster.FailExit && !s.Done && s.Bad > 0 {
		ae.Class = muster.FailMalformed
	}
	if ae.Class == muster.FailRateLimit && ae.RetryAfter == 0 && s.RetryAfterMS > 0 {
		ae.RetryAfter = time.Duration(s.RetryAfterMS) * time.Millisecond
	}
	return ae
}

// finalAnswer reads a reviewer's findings or a coder's satisfied
// statement from the final answer into res, with the tail and the
// (redacted) answer.
func finalAnswer(role muster.Role, s *Stream, res *muster.ExecResult) {
	if role == muster.RoleReviewer {
		if f, ok := ParseFindings(s.Final); ok {
			res.Reviewed = true
			res.Findings = f
			s.Emit(muster.Record{Type: muster.RecFindings, Findings: f})
		}
	} else if Satisfied(s.Final) {
		res.Satisfied = true
		s.Emit(muster.Record{Type: muster.RecSatisfied})
	}
	res.SessionID = s.SessionID
	res.Tail = s.Tail()
	res.Final = s.Redact(s.Final)
}

// resumeFailures are what the CLIs say when a session to resume is not
// found.
var resumeFailures = []string{"no conversation found", "no previous sessions found", "error resuming session",
	"session not found", "thread not found", "no rollout found", "no saved session"}

// ResumeFailed reports whether an invocation failed because the session it
// was asked to resume does not exist; the caller then starts afresh.
func ResumeFailed(res *muster.ExecResult, err error) bool {
	if err == nil {
		return false
	}
	text := strings.ToLower(err.Error())
	if res != nil {
		text += "\n" + strings.ToLower(res.Tail)
	}
	return containsAny(text, resumeFailures...)
}

// stoppedError is the error of an invocation muster stopped (a
// cancellation, a stall, the timeout) or that reached a limit of its
// cgroup ([run] max_pids, max_memory), or nil.
func stoppedError(ctx context.Context, pr proc.Result, name string, stall time.Duration, spec proc.Spec) error {
	switch pr.Stopped {
	case "cancelled":
		if c := context.Cause(ctx); c != nil {
			return c
		}
		return ctx.Err()
	case "stall":
		return &muster.AgentError{Class: muster.FailStall, ExitCode: pr.ExitCode,
			Message: fmt.Sprintf("%s printed nothing for %s; killed", name, stall)}
	case "timeout":
		return &muster.AgentError{Class: muster.FailTimeout, ExitCode: pr.ExitCode,
			Message: fmt.Sprintf("%s ran past its timeout of %s; killed", name, spec.Timeout)}
	}
	if why := pr.LimitReason(spec.Confine); why != "" {
		return &muster.AgentError{Class: muster.FailExit, ExitCode: pr.ExitCode, Message: name + " " + why}
	}
	return nil
}

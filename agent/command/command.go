// Package command is the "command" executor kind: it runs any program as
// an agent, speaking the protocol of DESIGN.md §5. The program gets the
// prompt on stdin (and in MUSTER_PROMPT_FILE), a scrubbed environment with
// MUSTER_* variables, runs in the worktree in its own process group, and
// reports JSON records on stdout.
package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	muster "github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/proc"
)

// Bounds on what an invocation keeps of its transcript.
const (
	// TailBytes is how much of the end of the transcript ExecResult.Tail keeps.
	TailBytes = 4 << 10
	// MaxMessage bounds the text of one message record.
	MaxMessage = 2 << 10
	// MaxMessages bounds the total text of message records of one invocation;
	// past it, transcript lines are only kept in the tail.
	MaxMessages = 256 << 10
	// MaxFinal bounds ExecResult.Final: the first transcript lines of
	// stdout (a planner's plan, when it prints it).
	MaxFinal = 64 << 10
)

// Executor runs a program per DESIGN.md §5.
type Executor struct {
	spec *muster.ExecutorSpec
	argv []string
}

// New returns the executor for spec; spec.Command (plus spec.Args) is the
// argv, run without a shell.
func New(spec *muster.ExecutorSpec) (*Executor, error) {
	if spec == nil || len(spec.Command) == 0 || spec.Command[0] == "" {
		name := ""
		if spec != nil {
			name = spec.Name
		}
		return nil, fmt.Errorf("executor %q: kind command needs a command", name)
	}
	argv := append(append([]string(nil), spec.Command...), spec.Args...)
	return &Executor{spec: spec, argv: argv}, nil
}

// Execute runs the program once.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	if emit == nil {
		emit = func(muster.Record) {}
	}
	scratch := req.Scratch
	if scratch == "" {
		d, err := os.MkdirTemp("", "muster-cmd-")
		if err != nil {
			return nil, &muster.AgentError{Class: muster.FailStart, Message: err.Error()}
		}
		defer os.RemoveAll(d)
		scratch = d
	}
	promptFile := filepath.Join(scratch, "prompt.md")
	if err := os.WriteFile(promptFile, []byte(req.Prompt), 0o600); err != nil {
		return nil, &muster.AgentError{Class: muster.FailStart, Message: fmt.Sprintf("write prompt file: %v", err)}
	}
	env := Environ(e.spec, req, promptFile)

	var p parser
	p.emit = emit
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = e.spec.Timeout
	}
	res, err := proc.Run(ctx, proc.Spec{
		Argv:     e.argv,
		Dir:      req.Dir,
		Env:      env,
		Stdin:    strings.NewReader(req.Prompt),
		Grace:    req.Grace,
		Timeout:  timeout,
		OnLine:   p.line,
		OnStderr: p.stderr,
		// Before the readers start: emit is never called concurrently.
		OnStart: func(pid int) { emit(muster.Record{Type: muster.RecPID, PID: pid}) },
	})
	var pe *muster.PanicError
	if errors.As(err, &pe) {
		return nil, pe // a bug of muster's, not the agent's: the run stops
	}
	if err != nil {
		return nil, &muster.AgentError{Class: muster.FailStart, ExitCode: -1,
			Message: fmt.Sprintf("executor %s: cannot start %s: %v", e.spec.Name, e.argv[0], unwrapStart(err))}
	}
	out := p.result()
	out.ExitCode = res.ExitCode
	switch {
	case res.Stopped == "cancelled":
		if cause := context.Cause(ctx); cause != nil {
			return out, cause
		}
		return out, ctx.Err()
	case res.Stopped == "timeout":
		return out, &muster.AgentError{Class: muster.FailTimeout, ExitCode: res.ExitCode,
			Message: fmt.Sprintf("executor %s: killed after its timeout of %s", e.spec.Name, timeout)}
	case res.Stopped == "stall":
		return out, &muster.AgentError{Class: muster.FailStall, ExitCode: res.ExitCode,
			Message: fmt.Sprintf("executor %s: no output for too long", e.spec.Name)}
	case res.ExitCode != 0:
		msg := fmt.Sprintf("executor %s: %s exited with status %d", e.spec.Name, filepath.Base(e.argv[0]), res.ExitCode)
		if res.ExitCode == -1 {
			msg = fmt.Sprintf("executor %s: %s was killed by a signal", e.spec.Name, filepath.Base(e.argv[0]))
		}
		return out, &muster.AgentError{Class: muster.FailExit, ExitCode: res.ExitCode, Message: msg}
	}
	return out, nil
}

func unwrapStart(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Environ returns the environment of an invocation: muster's own, scrubbed
// of credentials (except the variable named by spec.APIKeyEnv), then
// spec.Env, req.Env and the MUSTER_* variables, later ones winning.
func Environ(spec *muster.ExecutorSpec, req *muster.ExecRequest, promptFile string) []string {
	var allow []string
	if spec.APIKeyEnv != "" {
		allow = append(allow, spec.APIKeyEnv)
	}
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, kv := range proc.Environ(allow...) {
		k, v, _ := strings.Cut(kv, "=")
		set(k, v)
	}
	for _, m := range []map[string]string{spec.Env, req.Env} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(k, m[k])
		}
	}
	for k, v := range MusterVars(req, promptFile) {
		set(k, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// MusterVars returns the MUSTER_* variables of DESIGN.md §5 for a request.
func MusterVars(req *muster.ExecRequest, promptFile string) map[string]string {
	m := map[string]string{
		"MUSTER_RUN_ID":      req.Run,
		"MUSTER_ROLE":        req.Role,
		"MUSTER_CLONE":       strconv.Itoa(req.Clone),
		"MUSTER_ATTEMPT":     strconv.Itoa(req.Attempt),
		"MUSTER_ROUND":       strconv.Itoa(req.Round),
		"MUSTER_WORKTREE":    req.Dir,
		"MUSTER_PROMPT_FILE": promptFile,
	}
	if req.Spec != nil {
		m["MUSTER_EXECUTOR"] = req.Spec.Name
	}
	if req.Task != nil {
		m["MUSTER_TASK_ID"] = string(req.Task.ID)
		m["MUSTER_TASK_TITLE"] = req.Task.Title
		m["MUSTER_OWNS"] = strings.Join(req.Task.Owns, "\n")
	}
	if req.DiffFile != "" {
		m["MUSTER_DIFF_FILE"] = req.DiffFile
	}
	if req.PlanOut != "" {
		m["MUSTER_PLAN_OUT"] = req.PlanOut
	}
	return m
}

// wireRecord is one JSON record line of the protocol.
type wireRecord struct {
	Type             json.RawMessage  `json:"type"`
	Model            string           `json:"model"`
	InputTokens      int64            `json:"input_tokens"`
	OutputTokens     int64            `json:"output_tokens"`
	CacheReadTokens  int64            `json:"cache_read_tokens"`
	CacheWriteTokens int64            `json:"cache_write_tokens"`
	CostUSD          *float64         `json:"cost_usd"`
	Name             string           `json:"name"`
	Args             json.RawMessage  `json:"args"`
	Findings         []muster.Finding `json:"findings"`
	Text             string           `json:"text"`
	SessionID        string           `json:"session_id"`
}

// ParseRecord turns one stdout line into a record. ok is false for
// transcript lines (not a JSON object with a known string type).
func ParseRecord(line string) (rec muster.Record, ok bool) {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "{") {
		return rec, false
	}
	var w wireRecord
	if json.Unmarshal([]byte(s), &w) != nil {
		return rec, false
	}
	var typ string
	if json.Unmarshal(w.Type, &typ) != nil {
		return rec, false
	}
	switch typ {
	case muster.RecUsage:
		u := muster.Usage{InputTokens: w.InputTokens, OutputTokens: w.OutputTokens,
			CacheReadTokens: w.CacheReadTokens, CacheWriteTokens: w.CacheWriteTokens}
		if w.CostUSD != nil {
			u.CostMicros = muster.MicrosFromUSD(*w.CostUSD)
		}
		return muster.Record{Type: typ, Model: w.Model, Usage: u}, true
	case muster.RecTool:
		args := ""
		if len(w.Args) > 0 {
			if json.Unmarshal(w.Args, &args) != nil {
				args = string(w.Args)
			}
		}
		return muster.Record{Type: typ, Tool: w.Name, Args: args}, true
	case muster.RecFindings:
		// "Major", " CRITICAL ": the severity is a word, not its spelling.
		for i := range w.Findings {
			w.Findings[i].Severity = strings.ToLower(strings.TrimSpace(w.Findings[i].Severity))
		}
		return muster.Record{Type: typ, Findings: w.Findings}, true
	case muster.RecSatisfied:
		return muster.Record{Type: typ}, true
	case muster.RecNotes:
		return muster.Record{Type: typ, Text: w.Text}, true
	case muster.RecSession:
		if w.SessionID == "" {
			return rec, false
		}
		return muster.Record{Type: typ, SessionID: w.SessionID}, true
	}
	return rec, false
}

// parser turns output lines into records and keeps the transcript's tail.
// line runs on the stdout goroutine; stderr on another, so the tail is
// guarded.
type parser struct {
	emit     func(muster.Record)
	msgBytes int

	mu    sync.Mutex
	tail  Tail
	final []byte // stdout transcript, up to MaxFinal
	res   muster.ExecResult
}

func (p *parser) line(l string) {
	rec, ok := ParseRecord(l)
	if !ok {
		p.mu.Lock()
		p.tail.Add(l)
		if len(p.final)+len(l)+1 <= MaxFinal {
			p.final = append(append(p.final, l...), '\n')
		}
		p.mu.Unlock()
		if p.msgBytes < MaxMessages {
			t := Truncate(l, MaxMessage)
			p.msgBytes += len(t)
			p.emit(muster.Record{Type: muster.RecMessage, Text: t})
		}
		return
	}
	p.mu.Lock()
	switch rec.Type {
	case muster.RecFindings:
		p.res.Reviewed = true
		p.res.Findings = append(p.res.Findings, rec.Findings...)
	case muster.RecSatisfied:
		p.res.Satisfied = true
	case muster.RecSession:
		p.res.SessionID = rec.SessionID
	}
	p.mu.Unlock()
	p.emit(rec)
}

func (p *parser) stderr(l string) {
	p.mu.Lock()
	p.tail.Add(l)
	p.mu.Unlock()
}

func (p *parser) result() *muster.ExecResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.res
	r.Tail = p.tail.String()
	r.Final = string(p.final)
	return &r
}

// Tail keeps about the last TailBytes of text added line by line.
type Tail struct{ b []byte }

// Add appends a line.
func (t *Tail) Add(line string) {
	t.b = append(t.b, line...)
	t.b = append(t.b, '\n')
	if len(t.b) > 2*TailBytes {
		t.b = append(t.b[:0], t.b[len(t.b)-TailBytes:]...)
	}
}

// String returns the kept text (at most TailBytes).
func (t *Tail) String() string {
	if len(t.b) > TailBytes {
		return string(t.b[len(t.b)-TailBytes:])
	}
	return string(t.b)
}

// Truncate cuts s to at most n bytes, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…[truncated]"
}

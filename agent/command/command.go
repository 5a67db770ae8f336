// Package command is the "command" executor kind: it runs any program as
// an agent, speaking the protocol of ARCHITECTURE.md §2.5. The program gets the
// prompt on stdin (and in MUSTER_PROMPT_FILE), a scrubbed environment with
// MUSTER_* variables, runs in the worktree in its own process group, and
// reports JSON records on stdout.
package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	muster "github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/proc"
	"github.com/muster-run/muster/internal/redact"
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

// Executor runs a program per ARCHITECTURE.md §2.5.
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
	// The driver wrote the prompt into the invocation's in/ (read-only to
	// the program); without one the executor makes a private directory
	// of its own for it.
	promptFile := req.PromptFile
	if promptFile == "" {
		d, err := os.MkdirTemp("", "muster-cmd-")
		if err != nil {
			return nil, &muster.AgentError{Class: muster.FailStart, Message: err.Error()}
		}
		defer os.RemoveAll(d)
		promptFile = filepath.Join(d, "prompt.md")
		if err := os.WriteFile(promptFile, []byte(req.Prompt), 0o600); err != nil {
			return nil, &muster.AgentError{Class: muster.FailStart, Message: fmt.Sprintf("write prompt file: %v", err)}
		}
	}
	env := Environ(e.spec, req, promptFile)

	var p parser
	p.emit = emit
	p.red = redact.New(Secrets(e.spec, req)...)
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = e.spec.Timeout
	}
	res, err := proc.Run(ctx, proc.Spec{
		Argv:     e.argv,
		Dir:      req.Dir,
		Env:      env,
		Stdin:    strings.NewReader(req.Prompt),
		Confine:  req.Confine,
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
	case res.Limit != "":
		return out, &muster.AgentError{Class: muster.FailExit, ExitCode: res.ExitCode,
			Message: fmt.Sprintf("executor %s: %s %s", e.spec.Name, filepath.Base(e.argv[0]), res.LimitReason(req.Confine))}
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
// of credentials (except those named by spec.EnvAllow and spec.APIKeyEnv), then
// spec.Env, req.Env and the MUSTER_* variables, later ones winning.
func Environ(spec *muster.ExecutorSpec, req *muster.ExecRequest, promptFile string) []string {
	allow := append([]string(nil), spec.EnvAllow...)
	if spec.APIKeyEnv != "" && (req.Endpoint == nil || req.Endpoint.BaseURL == "") {
		// Without a base_url muster cannot know the provider, so the
		// program holds its key; behind the endpoint it holds the
		// placeholder (endpointVars).
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
	for k, v := range endpointVars(spec, req) {
		set(k, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// endpointVars point a command behind muster's model endpoint at it
// (MUSTER_MODEL_BASE_URL, and the proxy variables) and give its
// api_key_env the placeholder, unless env_allow lets the real key
// through (validate warns then).
func endpointVars(spec *muster.ExecutorSpec, req *muster.ExecRequest) map[string]string {
	ep := req.Endpoint
	if ep == nil {
		return nil
	}
	m := agentkit.EndpointVars(ep)
	if ep.BaseURL != "" {
		m[muster.ModelBaseURLVar] = ep.BaseURL
	}
	if spec.APIKeyEnv != "" && ep.Key != "" && !slices.Contains(spec.EnvAllow, spec.APIKeyEnv) {
		m[spec.APIKeyEnv] = ep.Key
	}
	return m
}

// Secrets returns the values redacted from what the program reports: the
// key named by api_key_env, the secrets of the executor's env table and of
// the request's Env, and those of muster's own environment (redact.Values).
func Secrets(spec *muster.ExecutorSpec, req *muster.ExecRequest) []string {
	out := redact.Environ(os.Environ(), spec.EnvAllow...)
	if spec.APIKeyEnv != "" {
		out = append(out, os.Getenv(spec.APIKeyEnv))
	}
	for _, m := range []map[string]string{spec.Env, req.Env} {
		for k, v := range m {
			out = append(out, redact.Values(k, v)...)
		}
	}
	return out
}

// MusterVars returns the MUSTER_* variables of ARCHITECTURE.md §2.5 for a request.
func MusterVars(req *muster.ExecRequest, promptFile string) map[string]string {
	m := map[string]string{
		"MUSTER_RUN_ID":      req.Run,
		"MUSTER_ROLE":        string(req.Role),
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
	model := req.Model
	if model == "" && req.Spec != nil {
		model = req.Spec.Model
	}
	if model != "" {
		m["MUSTER_MODEL"] = model
	}
	return m
}

// Bounds on the records of one invocation, past which they are cut or
// dropped (docs/agents-http.md, "The command protocol"). The driver
// applies its own per-attempt caps on top (tool records, findings).
const (
	// MaxName bounds a tool name and a model name.
	MaxName = 100
	// MaxArgs bounds a tool record's args.
	MaxArgs = 1 << 10
	// MaxFindings bounds the findings of one invocation, all records together.
	MaxFindings = 100
	// MaxFindingTitle and MaxFindingDetail bound a finding's text.
	MaxFindingTitle  = 300
	MaxFindingDetail = 4 << 10
	// MaxNotes bounds the text of one notes record.
	MaxNotes = 4 << 10
)

// wireRecord is one JSON record line of the protocol. Numbers are read
// raw, so that one that is not an int64 (1e20, -0.5, "nan") is refused
// by name rather than turning the whole record into transcript.
type wireRecord struct {
	Type             json.RawMessage  `json:"type"`
	Model            string           `json:"model"`
	InputTokens      json.RawMessage  `json:"input_tokens"`
	OutputTokens     json.RawMessage  `json:"output_tokens"`
	CacheReadTokens  json.RawMessage  `json:"cache_read_tokens"`
	CacheWriteTokens json.RawMessage  `json:"cache_write_tokens"`
	CostUSD          json.RawMessage  `json:"cost_usd"`
	Name             string           `json:"name"`
	Args             json.RawMessage  `json:"args"`
	Findings         []muster.Finding `json:"findings"`
	Text             string           `json:"text"`
	SessionID        string           `json:"session_id"`
	Winner           string           `json:"winner"`
	Reason           string           `json:"reason"`
}

// ParseRecord turns one stdout line into a record. ok is false for
// transcript lines (not a JSON object with a known string type). Text is
// cut to the bounds above; the record is not redacted (the caller does).
// Usage numbers that are not counts (fractions, past int64, not numbers)
// are refused: Problem says which, and the count becomes 0 (below zero or
// not a number) or math.MaxInt64 (too big), for the driver to bound.
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
		var probs []string
		count := func(name string, raw json.RawMessage) int64 {
			n, why := parseCount(raw)
			if why != "" {
				probs = append(probs, name+" "+why)
			}
			return n
		}
		u := muster.Usage{InputTokens: count("input_tokens", w.InputTokens), OutputTokens: count("output_tokens", w.OutputTokens),
			CacheReadTokens: count("cache_read_tokens", w.CacheReadTokens), CacheWriteTokens: count("cache_write_tokens", w.CacheWriteTokens)}
		c, why := parseUSD(w.CostUSD)
		if why != "" {
			probs = append(probs, "cost_usd "+why)
		}
		u.CostMicros = c
		return muster.Record{Type: typ, Model: Truncate(w.Model, MaxName), Usage: u, Problem: strings.Join(probs, "; ")}, true
	case muster.RecTool:
		args := ""
		if len(w.Args) > 0 {
			if json.Unmarshal(w.Args, &args) != nil {
				args = string(w.Args)
			}
		}
		return muster.Record{Type: typ, Tool: Truncate(w.Name, MaxName), Args: Truncate(args, MaxArgs)}, true
	case muster.RecFindings:
		if len(w.Findings) > MaxFindings {
			w.Findings = w.Findings[:MaxFindings]
		}
		for i := range w.Findings {
			f := &w.Findings[i]
			// "Major", " CRITICAL ": the severity is a word, not its spelling.
			f.Severity = Truncate(strings.ToLower(strings.TrimSpace(f.Severity)), MaxName)
			f.Title = Truncate(f.Title, MaxFindingTitle)
			f.Detail = Truncate(f.Detail, MaxFindingDetail)
			f.Path = Truncate(f.Path, MaxFindingTitle)
			if f.Line < 0 {
				f.Line = 0
			}
		}
		return muster.Record{Type: typ, Findings: w.Findings}, true
	case muster.RecSatisfied:
		return muster.Record{Type: typ}, true
	case muster.RecVerdict:
		// A race's judge: winner names a candidate ("executor#clone"),
		// which the driver checks against the race's.
		return muster.Record{Type: typ, Winner: Truncate(strings.TrimSpace(w.Winner), MaxName), Text: Truncate(w.Reason, MaxFindingDetail)}, true
	case muster.RecNotes:
		return muster.Record{Type: typ, Text: Truncate(w.Text, MaxNotes)}, true
	case muster.RecSession:
		if w.SessionID == "" || len(w.SessionID) > MaxName {
			return rec, false
		}
		return muster.Record{Type: typ, SessionID: w.SessionID}, true
	}
	return rec, false
}

// parseCount reads a token count: absent or null is 0; why says what was
// wrong with one that is not a non-negative integer within int64.
func parseCount(raw json.RawMessage) (int64, string) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return 0, ""
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n, ""
	}
	f, err := strconv.ParseFloat(t, 64)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, fmt.Sprintf("%s is not a number (counted as 0)", Truncate(t, 40))
	case f > 0 && (f >= math.MaxInt64 || math.IsInf(f, 1)):
		return math.MaxInt64, ""
	case f < 0:
		return int64(math.Max(f, math.MinInt64)), ""
	}
	return int64(f), fmt.Sprintf("%s is not a whole number (counted as %d)", Truncate(t, 40), int64(f))
}

// parseUSD reads a cost in dollars as micro-dollars (saturated).
func parseUSD(raw json.RawMessage) (int64, string) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return 0, ""
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) {
		return 0, fmt.Sprintf("%s is not a number (counted as 0)", Truncate(t, 40))
	}
	return muster.MicrosFromUSD(f), ""
}

// parser turns output lines into records and keeps the transcript's tail.
// line runs on the stdout goroutine; stderr on another, so the tail is
// guarded.
type parser struct {
	emit     func(muster.Record)
	red      *redact.Redactor
	msgBytes int

	mu    sync.Mutex
	tail  Tail
	final []byte // stdout transcript, up to MaxFinal
	res   muster.ExecResult
}

func (p *parser) line(l string) {
	rec, ok := ParseRecord(l)
	if !ok {
		l = p.red.String(l)
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
	p.redactRecord(&rec)
	p.mu.Lock()
	switch rec.Type {
	case muster.RecFindings:
		p.res.Reviewed = true
		if room := MaxFindings - len(p.res.Findings); room > 0 {
			if len(rec.Findings) > room {
				rec.Findings = rec.Findings[:room]
			}
			p.res.Findings = append(p.res.Findings, rec.Findings...)
		} else {
			rec.Findings = nil
		}
	case muster.RecSatisfied:
		p.res.Satisfied = true
	case muster.RecVerdict:
		if p.res.Verdict == nil {
			p.res.Verdict = &muster.Verdict{Winner: rec.Winner, Reason: rec.Text}
		}
	case muster.RecSession:
		p.res.SessionID = rec.SessionID
	}
	p.mu.Unlock()
	p.emit(rec)
}

// redactRecord redacts every text of a record.
func (p *parser) redactRecord(r *muster.Record) {
	r.Model = p.red.String(r.Model)
	r.Tool = p.red.String(r.Tool)
	r.Args = p.red.String(r.Args)
	r.Text = p.red.String(r.Text)
	r.Winner = p.red.String(r.Winner)
	r.Problem = p.red.String(r.Problem)
	for i := range r.Findings {
		f := &r.Findings[i]
		f.Severity, f.Title, f.Detail, f.Path = p.red.String(f.Severity), p.red.String(f.Title), p.red.String(f.Detail), p.red.String(f.Path)
	}
}

func (p *parser) stderr(l string) {
	l = p.red.String(l)
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

// Add appends a line (of which at most the last TailBytes are kept, so
// that a huge line never grows the buffer past a few times TailBytes).
func (t *Tail) Add(line string) {
	if len(line) > TailBytes {
		line = line[len(line)-TailBytes:]
	}
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

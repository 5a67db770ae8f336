// Package planner turns a goal into a plan: it asks a planner agent
// (an executor clone with read authority, in a clone of the repository at
// its HEAD) for a plan, validates what comes back with the caller's
// checker, and asks again with the problems listed, up to a number of
// tries. Every step is an event in the plan session's own journal (a run
// of kind "plan"), so the planner's usage shows in muster report.
//
// The package is the imperative shell of muster plan, muster run --goal
// and the MCP server's plan tool; it gets git, the agent and the
// validator as ports.
package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
)

// TaskID is the one task of a plan session's journal: the planning.
const TaskID muster.TaskID = "plan"

// DefaultTries is how many times the planner is asked before giving up.
const DefaultTries = 3

// MaxPlanBytes bounds the plan read from MUSTER_PLAN_OUT or a final message.
const MaxPlanBytes = 1 << 20

// defaultTimeout bounds one try when the executor sets no timeout.
const defaultTimeout = 30 * time.Minute

// Options configure Run. Goal, RunID, Spec, Executor, Workspace, Base,
// Config, Journal, Check and ScratchDir are required.
type Options struct {
	// Goal is what the plan must achieve, in the user's words.
	Goal string
	// RunID names the plan session (its journal's run).
	RunID string
	// Output names the plan file in problems ("plan.md:12: ...").
	Output string
	// Tries bounds the questions asked (default DefaultTries).
	Tries int
	// Spec and Executor are the planner agent.
	Spec     *muster.ExecutorSpec
	Executor muster.Executor
	// Workspace gives the planner its clone at Base (Checkout).
	Workspace muster.Workspace
	Base      string
	// Config is the crew the plan is for: executors, roles, gates.
	Config *muster.Config
	// Journaled is Config as the journal keeps it, its secrets taken out
	// (default: Config).
	Journaled *muster.Config
	// Redactor removes secrets from what the planner says (events) and
	// writes (the plan) before muster keeps or shows it (nil: none).
	Redactor muster.Redactor
	// Journal records the session; Append makes each event durable.
	Journal muster.Journal
	// Check validates a plan's text as `muster validate` would, naming
	// the file name in its problems.
	Check func(name string, data []byte) (*muster.Plan, muster.Problems)
	// ScratchDir holds each try's prompt and plan-out files, outside
	// any clone.
	ScratchDir string
	// LogDir, when set, keeps each try's log (the end of the planner's
	// output) as muster.AttemptLogName(TaskID, try): the session's
	// muster.LogDir, which muster logs reads.
	LogDir string
	// Price estimates the cost of usage reported without one (optional).
	Price muster.Pricer
	// Clock stamps events (default: the system clock).
	Clock muster.Clock
	// Grace is the SIGTERM-to-SIGKILL grace of the agent's process.
	Grace time.Duration
	// Env holds extra variables for the agent.
	Env map[string]string
	// Confine, when set, confines the planner: it may write the paths
	// Confine lists, its try's scratch directory (plan-out file, home,
	// TMPDIR) and the executor's writable paths; never its clone (read
	// authority). nil: unconfined.
	Confine *muster.Confinement
	// OnEvent sees every event once it is durable.
	OnEvent func(e *muster.Event)
}

// Result is how a plan session ended.
type Result struct {
	// Text is the valid plan as the planner wrote it; nil when no try
	// gave one.
	Text []byte
	// Plan is Text parsed.
	Plan *muster.Plan
	// Problems are the last try's problems: warnings of a valid plan, or
	// what kept the last try from being one.
	Problems muster.Problems
	// Tries is how many times the planner was asked.
	Tries int
	// Usage is what the planner spent, over every try.
	Usage muster.Usage
}

// Valid reports whether a plan came back that validated.
func (r *Result) Valid() bool { return r != nil && r.Plan != nil }

// session is one Run.
type session struct {
	opts  Options
	clock muster.Clock
	res   *Result
	clone int
	// tools and messages count this try's records (capped at maxRecords
	// each); dropped counts the ones past the caps.
	tools, messages, dropped int
}

// maxRecords bounds the ToolUse and the Message events of one try, as
// the driver bounds an attempt's; usage is never dropped.
const maxRecords = 500

// Run asks the planner for a plan until one validates or the tries are
// spent. A plan that never validates is not an error: the Result says so
// (Valid is false) with the last problems. The error is
// muster.ErrInterrupted when ctx was cancelled, and a *muster.Error when
// the planner cannot run at all (it cannot start, its credentials are
// refused) or the journal fails.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := check(&opts); err != nil {
		return nil, err
	}
	s := &session{opts: opts, clock: opts.Clock, res: &Result{}, clone: 1}
	if s.clock == nil {
		s.clock = muster.SystemClock{}
	}
	task := &muster.Task{ID: TaskID, Title: title(opts.Goal), Role: muster.RolePlanner,
		Authority: muster.AuthorityRead, Executor: opts.Spec.Name, Prompt: opts.Goal, Review: "none"}
	journaled := opts.Journaled
	if journaled == nil {
		journaled = opts.Config
	}
	if err := s.emit(
		muster.Event{Type: muster.EvRunStarted, Schema: muster.SchemaVersion, Kind: muster.RunKindPlan, Run: opts.RunID,
			Plan: opts.Output, Base: opts.Base, Config: journaled},
		muster.Event{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{task}},
	); err != nil {
		return nil, err
	}
	slot := muster.Slot(opts.Spec.Name, s.clone)
	dir, err := opts.Workspace.Checkout(ctx, slot, opts.Base)
	if err != nil {
		if ctx.Err() != nil {
			return s.res, s.interrupted(ctx, 0)
		}
		_ = s.finish(muster.RunFailed)
		return s.res, &muster.Error{Code: muster.CodeInternal, Op: "planner clone", Err: err}
	}
	shape := Survey(dir, opts.Config)
	var last []byte
	for try := 1; try <= opts.Tries; try++ {
		s.res.Tries = try
		prompt := Prompt(PromptInput{Goal: opts.Goal, Shape: shape, Config: opts.Config, Output: opts.Output,
			Try: try, Tries: opts.Tries, Previous: last, Problems: s.res.Problems})
		text, why, err := s.ask(ctx, task, try, dir, prompt)
		if err != nil {
			return s.res, err
		}
		if why != "" {
			s.res.Problems = muster.Problems{{File: opts.Output, Message: why}}
			if err := s.failed(try, why); err != nil {
				return s.res, err
			}
			continue
		}
		last = text
		plan, probs := opts.Check(opts.Output, text)
		s.res.Problems = probs
		if errs := probs.Errors(); len(errs) > 0 {
			if err := s.failed(try, fmt.Sprintf("%d problems: %s", len(errs), firstLine(errs[0].String()))); err != nil {
				return s.res, err
			}
			continue
		}
		s.res.Text, s.res.Plan = text, plan
		if err := s.emit(
			muster.Event{Type: muster.EvTaskSucceeded, Task: TaskID, Attempt: try, Reason: fmt.Sprintf("%d tasks", len(plan.Tasks))},
			muster.Event{Type: muster.EvExecutorRelease, Task: TaskID, Executor: opts.Spec.Name, Clone: s.clone},
		); err != nil {
			return s.res, err
		}
		return s.res, s.finish(muster.RunSucceeded)
	}
	return s.res, s.finish(muster.RunFailed)
}

func check(o *Options) error {
	switch {
	case strings.TrimSpace(o.Goal) == "":
		return muster.Errorf(muster.CodeInvalid, "the goal is empty: say what the plan should achieve")
	case o.Spec == nil || o.Executor == nil || o.Workspace == nil || o.Config == nil || o.Journal == nil || o.Check == nil:
		return errors.New("planner: Spec, Executor, Workspace, Config, Journal and Check are required")
	case o.ScratchDir == "" || o.RunID == "":
		return errors.New("planner: RunID and ScratchDir are required")
	}
	if o.Tries <= 0 {
		o.Tries = DefaultTries
	}
	if o.Output == "" {
		o.Output = "plan.md"
	}
	return nil
}

// ask runs one try of the planner and returns the plan it gave, or why
// it gave none (a failure that earns another try).
func (s *session) ask(ctx context.Context, task *muster.Task, try int, dir, prompt string) (text []byte, why string, err error) {
	o := s.opts
	if err := s.emit(
		muster.Event{Type: muster.EvExecutorLeased, Task: TaskID, Executor: o.Spec.Name, Clone: s.clone, Role: muster.RolePlanner},
		muster.Event{Type: muster.EvTaskStarted, Task: TaskID, Attempt: try, Executor: o.Spec.Name, Clone: s.clone, Role: muster.RolePlanner},
	); err != nil {
		return nil, "", err
	}
	// A fresh directory of the try's own (internal/exchange): the prompt
	// in in/, the plan written to out/, a fresh home and TMPDIR.
	inv, err := exchange.New(o.ScratchDir, fmt.Sprintf("try-%d", try), exchange.Options{})
	if err != nil {
		return nil, "", s.fail(try, muster.Errorf(muster.CodeInternal, "planner scratch: %w", err))
	}
	promptFile, err := inv.WriteIn("prompt.md", []byte(prompt))
	if err != nil {
		return nil, "", s.fail(try, muster.Errorf(muster.CodeInternal, "planner scratch: %w", err))
	}
	timeout := o.Spec.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	req := &muster.ExecRequest{Run: o.RunID, Task: task, Role: muster.RolePlanner, Spec: o.Spec, Clone: s.clone,
		Attempt: try, Dir: dir, Prompt: prompt, PromptFile: promptFile, Authority: muster.AuthorityRead, Scratch: inv.Path,
		Home: inv.Home, PlanOut: inv.OutFile("plan-out.md"), Timeout: timeout, Grace: o.Grace, Env: tmpdir(o.Env, o.Spec, inv.Tmp),
		Confine: o.Confine.WithReadOnly(append([]string{dir}, inv.Readable()...)...).With(append(inv.Writable(), o.Spec.Writable...)...)}
	var journalErr error
	res, execErr := o.Executor.Execute(ctx, req, func(r muster.Record) {
		if ev, ok := s.record(r); ok && journalErr == nil {
			journalErr = s.emit(ev)
		}
	})
	if journalErr != nil {
		return nil, "", journalErr
	}
	if s.dropped > 0 {
		if err := s.emit(muster.Event{Type: muster.EvMessage, Task: TaskID, Executor: o.Spec.Name, Clone: s.clone,
			Message: fmt.Sprintf("[%d more tool and message records of this try not kept: at most %d of each]", s.dropped, maxRecords)}); err != nil {
			return nil, "", err
		}
	}
	s.tools, s.messages, s.dropped = 0, 0, 0
	if ctx.Err() != nil {
		return nil, "", s.interrupted(ctx, try)
	}
	if res != nil {
		s.logOutput(try, res.Tail)
	}
	if execErr != nil {
		// The end of what it printed says why (a crash's panic, a
		// missing module), in the reason as in the try's log.
		var ae *muster.AgentError
		if errors.As(execErr, &ae) && !ae.Retryable() {
			return nil, "", s.fail(try, &muster.Error{Code: muster.CodeInternal, Op: "planner " + o.Spec.Name, Err: execErr})
		}
		why := "the planner failed: " + firstLine(execErr.Error())
		if res != nil && strings.TrimSpace(res.Tail) != "" {
			why += "; its output ended: " + s.lastLines(res.Tail, 3)
		}
		return nil, why, nil
	}
	text, err = readPlanOut(inv)
	if err != nil {
		return nil, "MUSTER_PLAN_OUT: " + err.Error(), nil
	}
	if len(text) == 0 && res != nil {
		text = Extract(res.Final)
	}
	if len(text) > 0 {
		text = []byte(s.red(string(text)))
	}
	if len(text) == 0 {
		return nil, "the planner gave no plan: nothing in the file named by MUSTER_PLAN_OUT, and no Markdown plan (a \"# Plan:\" title or a \"## [ ] ID: Title\" task) in its final message", nil
	}
	return text, "", nil
}

// tmpdir gives the planner the TMPDIR of its try's own (as the driver
// gives each invocation), unless the executor's env sets one.
func tmpdir(env map[string]string, spec *muster.ExecutorSpec, dir string) map[string]string {
	if _, ok := spec.Env["TMPDIR"]; ok {
		return env
	}
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		out[k] = v
	}
	out["TMPDIR"] = dir
	return out
}

// record turns an agent's record into a journal event.
func (s *session) record(r muster.Record) (muster.Event, bool) {
	o := s.opts
	base := muster.Event{Task: TaskID, Executor: o.Spec.Name, Clone: s.clone}
	switch r.Type {
	case muster.RecUsage:
		u := r.Usage
		u.Estimated = false
		if u.CostMicros == 0 && o.Price != nil && u.Tokens() > 0 {
			if c, ok := o.Price(r.Model, u); ok {
				u.CostMicros, u.Estimated = c, true
			}
		}
		s.res.Usage.Add(u)
		base.Type, base.Role, base.Model, base.Usage = muster.EvTokensUsed, muster.RolePlanner, r.Model, u
	case muster.RecTool:
		if s.tools++; s.tools > maxRecords {
			s.dropped++
			return base, false
		}
		base.Type, base.Tool, base.Args = muster.EvToolUse, bound(r.Tool, 100), bound(r.Args, 2000)
	case muster.RecMessage:
		if s.messages++; s.messages > maxRecords {
			s.dropped++
			return base, false
		}
		base.Type, base.Message = muster.EvMessage, bound(r.Text, 2000)
	case muster.RecPID:
		base.Type, base.Role, base.PID = muster.EvAgentStarted, muster.RolePlanner, r.PID
	default:
		return base, false
	}
	return base, true
}

// failed ends a try that gave no valid plan; another may follow.
func (s *session) failed(try int, reason string) error {
	return s.emit(
		muster.Event{Type: muster.EvTaskFailed, Task: TaskID, Attempt: try, Reason: reason, Retry: try < s.opts.Tries},
		muster.Event{Type: muster.EvExecutorRelease, Task: TaskID, Executor: s.opts.Spec.Name, Clone: s.clone},
	)
}

// fail ends the session on an error no other try can mend.
func (s *session) fail(try int, cause error) error {
	if err := s.emit(
		muster.Event{Type: muster.EvTaskFailed, Task: TaskID, Attempt: try, Reason: firstLine(cause.Error())},
		muster.Event{Type: muster.EvExecutorRelease, Task: TaskID, Executor: s.opts.Spec.Name, Clone: s.clone},
	); err != nil {
		return err
	}
	if err := s.finish(muster.RunFailed); err != nil {
		return err
	}
	return cause
}

// interrupted records a cancelled session; try 0 means no try ran.
func (s *session) interrupted(ctx context.Context, try int) error {
	var evs []muster.Event
	if try > 0 {
		evs = append(evs,
			muster.Event{Type: muster.EvTaskCancelled, Task: TaskID, Attempt: try, Reason: "interrupted"},
			muster.Event{Type: muster.EvExecutorRelease, Task: TaskID, Executor: s.opts.Spec.Name, Clone: s.clone})
	}
	evs = append(evs, muster.Event{Type: muster.EvRunInterrupted, Reason: "interrupted"})
	if err := s.emit(evs...); err != nil {
		return err
	}
	if c := context.Cause(ctx); c != nil && errors.Is(c, muster.ErrInterrupted) {
		return c
	}
	return muster.ErrInterrupted
}

func (s *session) finish(state string) error {
	return s.emit(muster.Event{Type: muster.EvRunFinished, State: state})
}

// red removes secrets from text an agent produced.
func (s *session) red(text string) string {
	if s.opts.Redactor == nil {
		return text
	}
	return s.opts.Redactor.String(text)
}

func (s *session) emit(evs ...muster.Event) error {
	now := s.clock.Now().UTC()
	for i := range evs {
		e := &evs[i]
		if e.Time.IsZero() {
			e.Time = now
		}
		// What an agent or an error said may hold a secret.
		e.Tool, e.Args, e.Model = s.red(e.Tool), s.red(e.Args), s.red(e.Model)
		e.Message, e.Reason = s.red(e.Message), s.red(e.Reason)
		if err := s.opts.Journal.Append(e); err != nil {
			return &muster.Error{Code: muster.CodeInternal, Op: "journal", Err: err}
		}
		if s.opts.OnEvent != nil {
			s.opts.OnEvent(e)
		}
	}
	return nil
}

// readPlanOut reads the plan the agent wrote, if any, through
// internal/exchange: a regular file (never a link or a FIFO the agent
// left in its place), bounded.
func readPlanOut(inv *exchange.Dir) ([]byte, error) {
	data, err := inv.ReadOut("plan-out.md", MaxPlanBytes)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(string(data)) == "" {
		return nil, nil
	}
	return data, nil
}

func title(goal string) string {
	return bound(firstLine(goal), 80)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// bound cuts s to at most n bytes, on a rune boundary.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

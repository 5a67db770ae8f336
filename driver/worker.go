package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/exchange"
)

// Bounds on what an attempt writes into the journal.
const (
	maxMessage    = 1024
	maxGateOutput = 4096
	maxFeedback   = 6000
	maxTransient  = 3
	// usageLimitRetries is how many attempts beyond Retries a task gets
	// when its executor hit a usage limit with a reset time.
	usageLimitRetries = 3
	maxTranscript     = 16 << 10
)

// worker runs one attempt of one task: the agent, its fix rounds, the
// commit and the integration. It talks to the loop only through send,
// lease and block, and returns the attempt's final events.
type worker struct {
	d       *Driver
	a       engine.Action
	task    *muster.Task
	cfg     *muster.Config
	runID   string
	scratch string
	deps    []depOutput

	dir, base string
	sessionID string
	// round is the round the attempt is in.
	round int
	// lastMsg is the coder's last message; transcript is the end of what
	// it said in this attempt (for a ## Findings section).
	lastMsg    string
	transcript string
	// prevBlocking holds the blocking findings of the last review.
	prevBlocking map[string]bool
	// baselined holds the task gates already run on the base.
	baselined map[string]bool
	// planOut is the out/ directory where a delegating task's agent, in
	// its latest round, may write new tasks (planOutFile).
	planOut string
	// home and tmp are the coder's, made at its first round and reused by
	// its later ones (exchangeFor).
	home, tmp string
	// pendingNotes are the notes records of the round under way, shared
	// when it is accepted (shareFindings).
	pendingNotes []pendingNote
	// envFailed is set when a gate could not run at all (gateEnv): the
	// run stops at once, with no fix round and nothing charged.
	envFailed string
	// remoteGates holds the gate results of the last coder invocation
	// when its executor ran them where the agent ran (a fleet worker).
	remoteGates []muster.GateResult
	// counts are the attempt's records so far, for the caps.
	counts counters
	// gateChanged are the files a gate names that the round's change
	// touches, flagged in the review prompt.
	gateChanged []string
	// followup and prFeedback are what a TaskReopened gave the task (a
	// pull request's feedback, muster pr --follow); followup 0: none.
	followup   int
	prFeedback string
	// race is the racer of a race candidate (nil: an ordinary attempt);
	// raceSubmitted is set once its passing commit went to the racer.
	race          *racer
	raceSubmitted bool
	// released is set while the attempt holds no clone: its commit waits
	// for integration (clonelease.go). guard is the workspace's guard
	// (nil: none), guarding whether its attempt on the clone is open.
	released bool
	guard    muster.Guard
	guarding bool
}

type depOutput struct {
	ID     muster.TaskID
	Title  string
	Commit string
	Reason string
	// Paths and Message are the files its commit changed and its
	// agent's last message (untrusted).
	Paths   []string
	Message string
}

func (w *worker) slot() string { return muster.Slot(w.a.Executor, w.a.Clone) }

// send hands intermediate events to the loop.
func (w *worker) send(evs ...muster.Event) {
	for i := range evs {
		if evs[i].Task == "" {
			evs[i].Task = w.a.Task
		}
		if evs[i].Attempt == 0 {
			evs[i].Attempt = w.a.Attempt
		}
	}
	w.d.msgs <- message{events: evs}
}

// stopRun ends the attempt, and the run, on an environment error no task
// can fix: the attempt is cancelled (a resume runs it again) and the loop
// stops the run with err.
func (w *worker) stopRun(err error) []muster.Event {
	w.d.msgs <- message{fatal: err}
	return []muster.Event{{Type: muster.EvTaskCancelled, Task: w.a.Task, Attempt: w.a.Attempt, Reason: bound("the run stopped: "+err.Error(), 600)}}
}

// durable hands events to the loop and waits until they are in the
// journal and synced.
func (w *worker) durable(evs ...muster.Event) error {
	for i := range evs {
		if evs[i].Task == "" {
			evs[i].Task = w.a.Task
		}
		if evs[i].Attempt == 0 {
			evs[i].Attempt = w.a.Attempt
		}
	}
	reply := make(chan error, 1)
	w.d.msgs <- message{events: evs, durable: reply}
	return <-reply
}

func (w *worker) fail(reason string, retry bool) []muster.Event {
	return []muster.Event{{Type: muster.EvTaskFailed, Task: w.a.Task, Attempt: w.a.Attempt, Reason: reason, Retry: retry}}
}

func (w *worker) cancelled(ctx context.Context) []muster.Event {
	reason, why := cancelOf(context.Cause(ctx))
	return []muster.Event{{Type: muster.EvTaskCancelled, Task: w.a.Task, Attempt: w.a.Attempt, Reason: reason, Cause: why}}
}

func (w *worker) spec() *muster.ExecutorSpec {
	if w.a.Executor == engine.CodeExecutor {
		return &muster.ExecutorSpec{Name: engine.CodeExecutor, Kind: "code", Clones: engine.CodeClones(w.cfg)}
	}
	if s := w.cfg.Executor(w.a.Executor); s != nil {
		return s
	}
	return &muster.ExecutorSpec{Name: w.a.Executor}
}

// run is the attempt. Each return path gives the attempt's final events.
func (w *worker) run(ctx context.Context) []muster.Event {
	exec := w.d.executor(w.a.Executor)
	if exec == nil {
		return w.fail(fmt.Sprintf("executor %q is not available", w.a.Executor), false)
	}
	feedback := ""
	conflictRetried := false
	start, prepared := 0, false
	for {
		if !prepared {
			dir, base, err := w.d.opts.Workspace.Prepare(ctx, w.slot())
			if ctx.Err() != nil {
				return w.cancelled(ctx)
			}
			if errors.Is(err, muster.ErrBranchMoved) {
				return w.stopRun(err)
			}
			if err != nil {
				return w.opFailed("prepare the clone's worktree", err, w.charged() <= w.task.Retries)
			}
			w.dir, w.base = dir, base
			// Dependencies first: a setup that fails before any change
			// is the environment's, never the task's.
			if err := w.d.setupBase(ctx, dir, "the run's tip "+short(base)+" in "+w.slot()+"'s clone", w.cfg); err != nil {
				if ctx.Err() != nil {
					return w.cancelled(ctx)
				}
				return w.opFailed("set up the clone", err, false)
			}
		}
		var final []muster.Event
		var commit string
		if w.task.Loop != nil && start == 0 {
			final, commit = w.loop(ctx, exec)
		} else {
			final, commit = w.rounds(ctx, exec, feedback, start)
		}
		if final != nil {
			if len(final) == 1 && final[0].Type == muster.EvTaskSucceeded && !conflictRetried {
				// No change, but a delegating task may have planned work.
				if why := w.splice(); why != "" {
					return w.fail(why, false)
				}
			}
			return final
		}
		if commit == "" {
			// Unreachable (rounds and loop return final events or a
			// commit); still, every attempt must end with an outcome.
			return w.fail("internal error: the attempt ended without an outcome", false)
		}
		// New tasks are validated before the commit lands: a bad
		// fragment fails the task with nothing integrated.
		if !conflictRetried {
			if why := w.splice(); why != "" {
				return w.fail(why, false)
			}
		}
		if end := w.beforeIntegration(ctx, commit); end != nil {
			return end
		}
		// The clone goes back to the crew while the commit waits for
		// the queue's verdict (clonelease.go).
		w.releaseClone()
		var again redo
		if final, again = w.verdict(ctx, w.integrate(ctx, commit), conflictRetried); final != nil {
			return final
		}
		feedback, start, prepared = again.feedback, again.start, again.prepared
		conflictRetried = conflictRetried || again.conflict
	}
}

// rounds runs the agent and its fix rounds from round start. It returns
// either the final events of a failed or finished attempt, or the task
// commit to integrate.
func (w *worker) rounds(ctx context.Context, exec muster.Executor, feedback string, start int) ([]muster.Event, string) {
	m := engine.NewAttempt(start, w.cfg.MaxRounds())
	first := firstLine(feedback)
	for {
		round, ok := m.Next(first)
		if !ok {
			return w.step(m.Exhausted()), ""
		}
		w.round = round
		if round > 0 {
			w.send(muster.Event{Type: muster.EvFixRound, Round: round, Reason: m.Why()})
		}
		w.send(muster.Event{Type: muster.EvPhase, Phase: "agent", Round: round})
		res, err := w.execute(ctx, exec, round, feedback)
		if ctx.Err() != nil {
			return w.cancelled(ctx), ""
		}
		if err != nil {
			return w.agentFailure(err, res), ""
		}
		var final []muster.Event
		var commit string
		feedback, final, commit = w.check(ctx, m, res, round)
		if final != nil || commit != "" {
			return final, commit
		}
	}
}

// check runs a round's checks on what the agent left, in order, and asks
// the attempt's machine what each finding means: the feedback of the next
// round, or the attempt's final events, or the commit to integrate.
func (w *worker) check(ctx context.Context, m *engine.Attempt, res *muster.ExecResult, round int) (feedback string, final []muster.Event, commit string) {
	change, err := w.d.opts.Workspace.Change(ctx, w.dir, w.base)
	if err != nil {
		return "", w.opFailed("compute the change in the clone's worktree", err, false), ""
	}
	readOnly := w.task.EffectiveAuthority() == muster.AuthorityRead
	w.gateChanged = gateFilesIn(change, w.d.opts.GateFiles)
	viol := w.d.opts.Workspace.Violations(ctx, w.dir, change, w.task.Owns)
	if readOnly {
		viol = changedPaths(change)
	}
	if len(viol) > 0 {
		// Named for what they are: reserved files, symlinks leaving the
		// worktree, paths outside the repository or outside Owns.
		what, ev := strings.Join(w.explainViolations(viol), "; "), muster.Event{Type: muster.EvViolation, Paths: viol, Round: round}
		if readOnly {
			what, ev.Reason = "changed paths with read authority: "+strings.Join(viol, ", "), "read authority"
		}
		w.send(ev)
		switch st := m.Violation(what, w.cfg.Run.OnViolation == muster.OnViolationDiscard); st.Kind {
		case engine.StepFix:
			if readOnly {
				return "This task has read authority: it may not change files. Revert these:\n  " + strings.Join(viol, "\n  "), nil, ""
			}
			fb := "You changed files this task may not change (" + what + "). Revert these, keep to your paths:\n  " + strings.Join(viol, "\n  ")
			if len(w.task.Owns) > 0 {
				fb += "\nYou own:\n  " + strings.Join(w.task.Owns, "\n  ")
			}
			return fb, nil, ""
		default:
			if err := w.d.opts.Workspace.Revert(ctx, w.dir, w.base, viol); err != nil {
				return "", w.opFailed("revert the paths the task may not change", err, false), ""
			}
			// Gates that ran elsewhere saw the paths just reverted.
			w.remoteGates = nil
			if st.Kind == engine.StepFail {
				return "", w.step(st), ""
			}
			w.send(muster.Event{Type: muster.EvWarning, Message: "discarded out-of-bounds paths: " + strings.Join(viol, ", ")})
			if change, err = w.d.opts.Workspace.Change(ctx, w.dir, w.base); err != nil {
				return "", w.opFailed("compute the change in the clone's worktree", err, false), ""
			}
		}
	}
	if change.Empty() {
		delegated := w.task.Delegates && w.planOut != "" && exchange.Stat(w.planOut, planOutFile) > 0
		st := m.EmptyChange(engine.Empty{
			Delegated: delegated, ReadOnly: readOnly, Satisfied: res != nil && res.Satisfied,
			Answer: bound(oneLine(w.lastMsg), 300), NoopComplete: w.cfg.Run.Noop == muster.NoopComplete,
			Retries: w.charged() <= w.task.Retries})
		switch {
		case st.Kind == engine.StepFix:
			return emptyChangeQuestion, nil, ""
		case delegated:
		case st.Kind == engine.StepSucceed && (readOnly || res != nil && res.Satisfied):
			// What a read task or a satisfied coder found goes to later tasks.
			w.shareFindings()
		case m.AskedEmpty():
			w.send(muster.Event{Type: muster.EvWarning, Message: "asked whether the task already holds, the agent answered: " + bound(oneLine(w.lastMsg), 300)})
		}
		return "", w.step(st), ""
	}
	if final := w.summarize(ctx, m, round); final != nil {
		return "", final, ""
	}
	// An interrupt during the gates or the review cancels the task: a
	// gate or reviewer stopped by it is no verdict.
	// Setup again when the change touched its inputs (a lockfile) or its
	// outputs (node_modules): set up before the change, a failure now is
	// the change's, with its output as feedback.
	if fb, failed, err := w.setupAfterAgent(ctx); err != nil || failed != "" {
		if ctx.Err() != nil {
			return "", w.cancelled(ctx), ""
		}
		if err != nil {
			return "", w.opFailed("set up the clone after the change", err, false), ""
		}
		return fb, w.stepUnlessFix(m.Gates(failed)), ""
	}
	fb, failed := w.gates(ctx, round, change)
	if ctx.Err() != nil {
		return "", w.cancelled(ctx), ""
	}
	// What the gates wrote (a __pycache__, a report) is not the agent's:
	// undone before the review, the commit and the next round's Owns
	// check, so only what the agent wrote counts.
	if err := w.undoGateOutput(ctx, w.dir, w.base, change); err != nil {
		return "", w.opFailed("undo what the gates wrote", err, false), ""
	}
	if w.envFailed != "" {
		// A gate that cannot start: no fix round can install it, and the
		// task is not charged: the run stops as on any environment error
		// (exit 3, resumable once the program is installed).
		return "", w.stopRun(&envError{cause: w.envFailed, err: errors.New("a gate could not run")}), ""
	}
	if st := m.Gates(failed); st.Kind != engine.StepGo {
		return fb, w.stepUnlessFix(st), ""
	}
	diff, final := w.reviewDiff(ctx)
	if final != nil {
		return "", final, ""
	}
	fb, failed, stop := w.review(ctx, round, diff)
	if ctx.Err() != nil {
		return "", w.cancelled(ctx), ""
	}
	if st := m.Review(failed, stop); st.Kind != engine.StepGo {
		return fb, w.stepUnlessFix(st), ""
	}
	commit, err = w.commit(ctx, change)
	if err != nil {
		if ctx.Err() != nil {
			return "", w.cancelled(ctx), ""
		}
		return "", w.opFailed("commit the change", err, false), ""
	}
	return "", nil, commit
}

// step turns the machine's final step into the attempt's final events.
func (w *worker) step(st engine.Step) []muster.Event {
	if st.Kind == engine.StepSucceed {
		return []muster.Event{{Type: muster.EvTaskSucceeded, Task: w.a.Task, Attempt: w.a.Attempt, Reason: st.Reason}}
	}
	return w.fail(st.Reason, st.Retry)
}

// stepUnlessFix is step for a final step, and nil (another round) for a
// fix round.
func (w *worker) stepUnlessFix(st engine.Step) []muster.Event {
	if st.Kind == engine.StepFix {
		return nil
	}
	return w.step(st)
}

// emptyChangeQuestion is the prompt of the one round a coder that changed
// nothing gets.
const emptyChangeQuestion = "You changed nothing. If the task already holds as it is, answer with a " +
	"{\"type\":\"satisfied\"} record and say briefly why. Otherwise make the change now."

// commit records the change and tells the loop, with the coder's last
// message for the tasks that depend on this one.
func (w *worker) commit(ctx context.Context, change *muster.Change) (string, error) {
	commit, err := w.d.opts.Workspace.Commit(ctx, w.dir, w.base, muster.CommitInfo{
		Run: w.runID, Task: w.task.ID, Title: w.task.Title, Executor: w.slot(), Followup: w.followup})
	if err != nil {
		return "", err
	}
	w.d.crash.at(CrashCommit)
	w.send(muster.Event{Type: muster.EvCommitted, Commit: commit, Paths: change.Paths(), Message: bound(w.lastMsg, maxMessage)})
	return commit, nil
}

// execute runs the coder once, retrying rate limits and transient errors
// with backoff inside the attempt.
func (w *worker) execute(ctx context.Context, exec muster.Executor, round int, feedback string) (*muster.ExecResult, error) {
	spec := w.spec()
	req := &muster.ExecRequest{
		Run: w.runID, Task: w.task, Role: w.a.Role, Spec: spec, Clone: w.a.Clone, Attempt: w.a.Attempt, Round: round,
		Dir: w.dir, Authority: w.task.EffectiveAuthority(), Model: w.task.Model, SessionID: w.sessionID,
		Timeout: w.task.Timeout, Grace: w.cfg.Grace(), Stall: w.cfg.Run.StallTimeout,
	}
	if req.Timeout == 0 {
		req.Timeout = spec.Timeout
	}
	req.Base = w.base
	if w.d.opts.Gates != nil {
		req.Gates, req.GateTimeout = append(append([]muster.GateSpec(nil), w.cfg.Gates...), w.taskGates()...), w.cfg.Run.GateTimeout
	}
	w.remoteGates = nil
	req.Prompt = w.d.red().String(buildPrompt(w, feedback, round))
	// What the coder says from here on is this round's: notes and
	// findings of a rejected round are not shared.
	w.transcript, w.pendingNotes = "", nil
	w.log(muster.LogRecord{Kind: muster.LogPrompt, Round: round, Role: w.a.Role, Slot: w.slot(), Text: promptHead(req.Prompt)})
	w.lastMsg = ""
	var inv *exchange.Dir
	if _, free := exec.(muster.ScratchFree); !free || w.task.Delegates {
		var err error
		if inv, err = w.exchangeFor(req, fmt.Sprintf("r%d", round), true, nil); err != nil {
			return nil, err
		}
		if w.task.Delegates {
			w.planOut, req.PlanOut = inv.Out, inv.OutFile(planOutFile)
		}
	}
	req.Confine = w.confinement(spec, req.Authority, inv, w.dir)
	backoff := time.Second
	for try := 0; ; try++ {
		res, err := exec.Execute(ctx, req, w.record(spec, w.a.Role, w.a.Clone))
		if evs := w.overflow(spec, w.a.Role, w.a.Clone); len(evs) > 0 {
			w.send(evs...)
		}
		if res != nil && res.SessionID != "" {
			w.sessionID = res.SessionID
		}
		if res != nil && strings.TrimSpace(res.Tail) != "" {
			w.log(muster.LogRecord{Kind: muster.LogOutput, Round: round, Role: w.a.Role, Slot: w.slot(), Text: res.Tail})
		}
		if err == nil && res != nil && res.Gates != nil {
			w.remoteGates = res.Gates
		}
		var ae *muster.AgentError
		if err == nil || ctx.Err() != nil || !errors.As(err, &ae) || try >= maxTransient {
			return res, err
		}
		var wait time.Duration
		switch ae.Class {
		case muster.FailTransient, muster.FailStall:
			wait = backoff
		default:
			return res, err
		}
		if wait > time.Minute {
			wait = time.Minute
		}
		w.send(muster.Event{Type: muster.EvWarning, Message: fmt.Sprintf("%s on %s: retrying in %s", ae.Class, w.slot(), wait.Round(time.Millisecond))})
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(wait):
		}
		backoff *= 2
	}
}

func (w *worker) agentFailure(err error, res *muster.ExecResult) []muster.Event {
	var pe *muster.PanicError
	if errors.As(err, &pe) {
		return w.stopRun(pe)
	}
	// An agent that failed because the disk is full is not the task's
	// failure: the run stops, and a resume runs it again.
	detail := err
	if res != nil && res.Tail != "" {
		detail = fmt.Errorf("%w: %s", err, lastLines(res.Tail, 3))
	}
	if env := diskFull(detail); env != nil {
		return w.stopRun(env)
	}
	var ae *muster.AgentError
	retryable := true
	reason := err.Error()
	if errors.As(err, &ae) {
		retryable = ae.Retryable()
		if ae.Class == muster.FailRateLimit {
			return w.rateLimited(ae, reason, res)
		}
		if ae.Class == muster.FailAuth {
			return w.stopRun(w.authFailed(ae))
		}
		if ae.Class == muster.FailUsageLimit && !ae.ResetAt.IsZero() {
			// The executor takes no work until its limit resets (a journal
			// fact, so a resume knows it too); the task waits for it or
			// goes to another executor, a few times over its Retries.
			until := ae.ResetAt.UTC()
			w.send(muster.Event{Type: muster.EvExecutorPaused, Executor: w.a.Executor, Until: &until, Reason: "usage limit"})
			reason += " (paused until " + until.Format(time.RFC3339) + ")"
			if res != nil && res.Tail != "" {
				reason += ": " + lastLines(res.Tail, 3)
			}
			return w.fail("agent failed: "+reason, w.charged() <= w.task.Retries+usageLimitRetries)
		}
	}
	if res != nil && res.Tail != "" {
		reason += ": " + lastLines(res.Tail, 3)
	}
	return w.fail("agent failed: "+reason, retryable && w.charged() <= w.task.Retries)
}

// rateLimited ends an attempt the agent's provider refused for its rate:
// the RateLimited event paces the executor's credential (fewer agents at
// once, a backoff; engine/pace.go) and the task is retried without the
// attempt counting against its Retries, up to engine.MaxUncharged times.
func (w *worker) rateLimited(ae *muster.AgentError, reason string, res *muster.ExecResult) []muster.Event {
	ev := muster.Event{Type: muster.EvRateLimited, Executor: w.a.Executor, Clone: w.a.Clone, Reason: bound(w.d.red().String(ae.Message), 300)}
	if ae.RetryAfter > 0 {
		until := w.d.clock.Now().Add(ae.RetryAfter).UTC()
		ev.Until = &until
	}
	w.send(ev)
	if res != nil && res.Tail != "" {
		reason += ": " + lastLines(res.Tail, 3)
	}
	if w.a.Uncharged < engine.MaxUncharged {
		return w.fail("rate limited (not charged): "+reason, true)
	}
	return w.fail("agent failed: "+reason, w.charged() <= w.task.Retries)
}

// charged is the attempt's number among those that count against the
// task's Retries (rate-limited attempts do not).
func (w *worker) charged() int { return w.a.Attempt - w.a.Uncharged }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return bound(s, 200)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bound(strings.Join(lines, " | "), 300)
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

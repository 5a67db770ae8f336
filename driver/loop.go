package driver

import (
	"context"
	"fmt"
	"strings"

	"github.com/muster-run/muster"
)

// Loop verdicts, in LoopEnded's State.
const (
	LoopResolved  = "resolved"
	LoopExhausted = "exhausted"
	LoopFailed    = "failed"
)

// defaultLoopMax is the number of attempts of a Loop: without max.
const defaultLoopMax = 3

// loop runs a task's check/repair loop: up to Max attempts, each a check
// (a command run like a gate) and, when it fails and attempts remain, the
// coder as repair agent given the check's output. Each check is a
// LoopAttempt event (Round: the attempt, from 1) and the verdict a
// LoopEnded event. A resolved loop's
// change then passes the gates once and is committed; an exhausted or
// failed loop fails the task, so dependents follow the loop's verdict.
func (w *worker) loop(ctx context.Context, exec muster.Executor) ([]muster.Event, string) {
	spec := w.task.Loop
	limit := spec.Max
	if limit <= 0 {
		limit = defaultLoopMax
	}
	if w.d.opts.Gates == nil {
		return w.fail("loop: no gate runner to run the check", false), ""
	}
	g := muster.GateSpec{Name: string(w.task.ID) + "/check", Command: spec.Check}
	check := func(attempt int) muster.GateResult {
		w.send(muster.Event{Type: muster.EvPhase, Phase: "check", Round: attempt})
		r := w.d.opts.Gates.Run(ctx, w.dir, g, w.cfg.Run.GateTimeout)
		w.send(muster.Event{Type: muster.EvLoopAttempt, Gate: g.Name, Round: attempt, Passed: &r.Passed, Output: tail(r.Output, maxGateOutput)})
		return r
	}
	end := func(state string, attempt int, reason string) {
		w.send(muster.Event{Type: muster.EvLoopEnded, State: state, Round: attempt, Reason: reason})
	}
	var change *muster.Change
	for attempt := 1; ; attempt++ {
		w.round = attempt - 1
		r := check(attempt)
		if ctx.Err() != nil {
			return w.cancelled(ctx), ""
		}
		if r.Passed {
			if attempt == 1 {
				end(LoopResolved, attempt, "the check passes before any repair")
				return []muster.Event{{Type: muster.EvTaskSucceeded, Task: w.a.Task, Attempt: w.a.Attempt, Reason: "loop resolved: the check already passes"}}, ""
			}
			end(LoopResolved, attempt, fmt.Sprintf("the check passes on attempt %d", attempt))
			break
		}
		if attempt >= limit {
			reason := fmt.Sprintf("loop exhausted: the check still fails after %d attempts: %s", limit, gateSummary(r))
			end(LoopExhausted, attempt, reason)
			return w.fail(reason, false), ""
		}
		w.round = attempt
		feedback := fmt.Sprintf("The check `%s` fails (attempt %d of %d). Make it pass. Its output:\n%s",
			spec.Check, attempt, limit, tail(r.Output, maxFeedback/2))
		w.send(muster.Event{Type: muster.EvFixRound, Round: attempt, Reason: "loop: check failed: " + gateSummary(r)})
		w.send(muster.Event{Type: muster.EvPhase, Phase: "repair", Round: attempt})
		res, err := w.execute(ctx, exec, attempt, feedback)
		if ctx.Err() != nil {
			return w.cancelled(ctx), ""
		}
		if err != nil {
			end(LoopFailed, attempt, "repair agent failed: "+err.Error())
			return w.agentFailure(err, res), ""
		}
		if change, err = w.d.opts.Workspace.Change(ctx, w.dir, w.base); err != nil {
			end(LoopFailed, attempt, "compute change: "+err.Error())
			return w.opFailed("compute the change in the clone's worktree", err, false), ""
		}
		if viol := w.d.opts.Workspace.Violations(ctx, w.dir, change, w.task.Owns); len(viol) > 0 {
			w.send(muster.Event{Type: muster.EvViolation, Paths: viol, Round: attempt})
			reason := "loop failed: the repair changed paths outside Owns: " + strings.Join(viol, ", ")
			end(LoopFailed, attempt, reason)
			return w.fail(reason, false), ""
		}
	}
	if change.Empty() {
		return []muster.Event{{Type: muster.EvTaskSucceeded, Task: w.a.Task, Attempt: w.a.Attempt, Reason: "loop resolved without a change"}}, ""
	}
	if _, failed := w.gates(ctx, w.round, change); failed != "" {
		return w.fail("loop resolved but "+failed, false), ""
	}
	if ctx.Err() != nil {
		return w.cancelled(ctx), ""
	}
	commit, err := w.commit(ctx, change)
	if err != nil {
		return w.opFailed("commit the change", err, false), ""
	}
	return nil, commit
}

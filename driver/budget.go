package driver

import (
	"context"
	"errors"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// budgetError is the cause of an attempt cancelled because it, or the
// run, spent more than its budget. Its text ("budget: ...") becomes the
// TaskCancelled reason.
type budgetError struct{ reason string }

func (e *budgetError) Error() string { return e.reason }
func (e *budgetError) Unwrap() error { return muster.ErrBudget }

// budget acts on usage as it is applied: an attempt whose usage crosses
// its task's budget is cancelled, every attempt when the run's is
// crossed, and the run warns once at 80 %. Deciding what may start
// within the budget is engine.Decide's job.
func (d *Driver) budget(evs []*muster.Event) error {
	// The batch is applied whole before this: so is what it says of
	// which tasks are landing.
	for _, e := range evs {
		d.trackLanding(e)
	}
	used := false
	for _, e := range evs {
		if e.Type != muster.EvTokensUsed {
			continue
		}
		used = true
		why, all := d.state.OverBudget(e.Task)
		switch {
		case why == "":
		case all:
			// A task whose change is committed (reviewed, its gates
			// passed) spends nothing more to land: the run's budget
			// stops the agents still working, not its integration.
			for task, cancel := range d.cancels {
				if !d.landing[task] {
					cancel(&budgetError{why})
				}
			}
		default:
			if cancel := d.cancels[e.Task]; cancel != nil {
				cancel(&budgetError{why})
			}
		}
	}
	if !used {
		return nil
	}
	if msg := d.state.BudgetWarning(); msg != "" {
		return d.emit(muster.Event{Type: muster.EvWarning, Reason: engine.BudgetWarnReason, Message: msg})
	}
	return nil
}

// trackLanding keeps the set of tasks whose attempt committed its change
// and has not spent since: from Committed until a fix round (another
// agent round, which the budget may stop) or the attempt's end.
func (d *Driver) trackLanding(e *muster.Event) {
	switch e.Type {
	case muster.EvCommitted:
		if d.landing == nil {
			d.landing = map[muster.TaskID]bool{}
		}
		d.landing[e.Task] = true
	case muster.EvFixRound, muster.EvTaskSucceeded, muster.EvTaskFailed, muster.EvTaskCancelled:
		delete(d.landing, e.Task)
	}
}

// stopped turns the failure of an attempt that was stopped on purpose
// (budget, interrupt) into its cancellation: a step cut short by the stop
// (a commit, a gate) is not the task's fault, and must not doom its
// dependents.
func stopped(ctx context.Context, final []muster.Event) []muster.Event {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, context.Canceled) {
		return final
	}
	reason, why := cancelOf(cause)
	for i, e := range final {
		if e.Type == muster.EvTaskFailed {
			final[i] = muster.Event{Type: muster.EvTaskCancelled, Task: e.Task, Attempt: e.Attempt, Reason: reason, Cause: why}
		}
	}
	return final
}

// cancelOf gives the reason and cause of a cancellation from the cause of
// the context that was cancelled.
func cancelOf(cause error) (string, muster.CancelCause) {
	switch {
	case cause == nil || errors.Is(cause, muster.ErrInterrupted) || errors.Is(cause, context.Canceled):
		return "interrupted", muster.CauseInterrupted
	case errors.Is(cause, muster.ErrBudget):
		return cause.Error(), muster.CauseBudget
	}
	return cause.Error(), muster.CauseStopped
}

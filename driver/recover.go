package driver

import (
	"context"
	"fmt"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// recover reconciles a replayed run with git and the world, then marks it
// resumed: attempts that were running are cancelled as interrupted,
// leases released, and tasks whose integration the journal records
// succeed. Only the journal says which commits muster made: a commit on
// the run branch that it does not record (whatever its trailers claim)
// is never taken for a task's work. The branch must be at the journal's
// tip, or at the one move the journal announced (Integrating) and did
// not record as done; that move (every task commit of a batch's chain
// not recorded yet) is then recorded.
func (d *Driver) recover(ctx context.Context) error {
	var evs []muster.Event
	tip, err := d.opts.Workspace.Tip(ctx)
	if err != nil {
		return &muster.Error{Code: muster.CodeInternal, Op: "resume", Err: err}
	}
	landed := map[muster.TaskID]string{} // integrated, success not yet recorded
	for _, id := range d.state.Order {
		if t := d.state.Tasks[id]; t.Commit != "" && t.State != muster.StateSucceeded {
			landed[id] = t.Commit
		}
	}
	switch m := d.state.Moving; {
	case tip == d.state.Tip:
	case m != nil && tip == m.Commit && m.From == d.state.Tip:
		// The move went through; its Integrated events (a batch's: the
		// chain's that are not recorded yet) did not reach the journal.
		for _, l := range m.Chain {
			evs = append(evs, muster.Event{Type: muster.EvIntegrated, Task: l.Task, Commit: l.Commit, Tip: m.Commit,
				Reason: "the run branch was found at the move muster announced"})
			if t := d.state.Tasks[l.Task]; t != nil && t.State != muster.StateSucceeded {
				landed[l.Task] = l.Commit
			}
		}
	default:
		return &muster.Error{Code: muster.CodeInternal, Op: "resume",
			Err: fmt.Errorf("%w: muster last left it at %s, it is at %s", muster.ErrBranchMoved, d.state.Tip, tip)}
	}
	released := map[string]bool{}
	orphans := engine.Orphans(d.state)
	// What survived of the crashed process's agents goes first, so that
	// nothing writes into a worktree once it is reset.
	if d.opts.KillOrphan != nil {
		for _, o := range orphans {
			if o.PID <= 0 {
				continue
			}
			if err := d.opts.KillOrphan(o.Proc); err != nil {
				evs = append(evs, muster.Event{Type: muster.EvWarning, Task: o.Lease.Task,
					Message: fmt.Sprintf("left process group %d alone: %v", o.PID, err)})
			}
		}
	}
	ended := map[muster.TaskID]bool{} // a race's task has an orphan per candidate: ended once
	for _, o := range orphans {
		t := d.state.Tasks[o.Lease.Task]
		if o.Running && t != nil && !ended[t.Task.ID] {
			ended[t.Task.ID] = true
			if c, ok := landed[t.Task.ID]; ok {
				evs = append(evs, muster.Event{Type: muster.EvTaskSucceeded, Task: t.Task.ID, Attempt: t.Attempts, Commit: c,
					Reason: "integrated before the interruption"})
				delete(landed, t.Task.ID)
			} else {
				evs = append(evs, muster.Event{Type: muster.EvTaskCancelled, Task: t.Task.ID, Attempt: t.Attempts, Reason: "interrupted", Cause: muster.CauseInterrupted})
			}
		}
		slot := muster.Slot(o.Lease.Executor, o.Lease.Clone)
		if _, held := d.state.Leases[slot]; held && !released[slot] {
			released[slot] = true
			evs = append(evs, muster.Event{Type: muster.EvExecutorRelease, Task: o.Lease.Task, Executor: o.Lease.Executor, Clone: o.Lease.Clone, Role: o.Lease.Role})
		}
	}
	// A task whose integration is recorded but whose success never
	// reached the journal (a crash between the two) is done.
	for _, id := range d.state.Order {
		t := d.state.Tasks[id]
		if c, ok := landed[id]; ok && t.State != muster.StateRunning {
			evs = append(evs, muster.Event{Type: muster.EvTaskSucceeded, Task: id, Attempt: t.Attempts, Commit: c, Reason: "integrated before the interruption"})
		}
	}
	evs = append(evs, d.resumed()...)
	if err := d.emit(evs...); err != nil {
		return err
	}
	if d.opts.Adopt != nil {
		// An edited plan the resume adopts: durable before any task takes it.
		return d.sync()
	}
	return nil
}

// resumed are the events that open a resume's part of the journal: the
// RunResumed, the tasks the run's pull request reopens (muster pr
// --follow: after the RunResumed, which would otherwise leave them
// succeeded) and the plan version the resume adopts.
func (d *Driver) resumed() []muster.Event {
	resumed := muster.Event{Type: muster.EvRunResumed, Config: d.opts.ResumeConfig, Owner: d.opts.Owner}
	if len(d.opts.Reopen) > 0 {
		resumed.Cause = muster.CausePR
	}
	evs := []muster.Event{resumed}
	for _, r := range d.opts.Reopen {
		if t := d.state.Tasks[r.Task]; t != nil && t.State == muster.StateSucceeded {
			evs = append(evs, muster.Event{Type: muster.EvTaskReopened, Task: r.Task, Followup: r.Followup, Message: bound(r.Message, maxFeedback)})
		}
	}
	if d.opts.Adopt != nil {
		evs = append(evs, *d.opts.Adopt)
	}
	return evs
}

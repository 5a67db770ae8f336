package driver

import (
	"context"
	"fmt"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// recover reconciles a replayed run with git and the world, then marks it
// resumed: attempts that were running are cancelled as interrupted,
// leases released, and tasks whose commit is on the run branch succeed.
func (d *Driver) recover(ctx context.Context) error {
	var evs []muster.Event
	commits := map[muster.TaskID]string{}
	if d.opts.Reconcile != nil {
		c, err := d.opts.Reconcile(ctx)
		if err != nil {
			return fmt.Errorf("reconcile with git: %w", err)
		}
		commits = c
	}
	released := map[string]bool{}
	orphans := engine.Orphans(d.state)
	// What survived of the crashed process's agents goes first, so that
	// nothing writes into a worktree once it is reset.
	if d.opts.KillOrphan != nil {
		for _, o := range orphans {
			if o.PID > 0 {
				d.opts.KillOrphan(o.PID)
			}
		}
	}
	for _, o := range orphans {
		t := d.state.Tasks[o.Lease.Task]
		if o.Running && t != nil {
			if c, ok := commits[t.Task.ID]; ok {
				evs = append(evs, muster.Event{Type: muster.EvTaskSucceeded, Task: t.Task.ID, Attempt: t.Attempts, Commit: c,
					Reason: "commit found on the run branch"})
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
	// A task whose commit landed but whose success never reached the
	// journal (a crash between the two) is done.
	for _, id := range d.state.Order {
		t := d.state.Tasks[id]
		if c, ok := commits[id]; ok && t.State != muster.StateSucceeded && t.State != muster.StateRunning {
			evs = append(evs, muster.Event{Type: muster.EvTaskSucceeded, Task: id, Attempt: t.Attempts, Commit: c, Reason: "commit found on the run branch"})
		}
	}
	resumed := muster.Event{Type: muster.EvRunResumed, Config: d.opts.ResumeConfig}
	evs = append(evs, resumed)
	return d.emit(evs...)
}

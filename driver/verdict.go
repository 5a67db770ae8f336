package driver

import (
	"context"
	"errors"
	"strings"

	"github.com/muster-run/muster"
)

// redo is the fix round a verdict of the integration queue asks for: its
// feedback, its first round, whether the clone already holds what it is
// to work on (else it is prepared at the tip), and whether it redoes a
// conflict.
type redo struct {
	feedback           string
	start              int
	prepared, conflict bool
}

// verdict turns the integration queue's verdict on the attempt's commit
// into the attempt's final events, or into a fix round on a clone leased
// again (a conflict: the task redone on the new tip; a plan-wide gate
// broken once merged: fixed on the merged tree).
func (w *worker) verdict(ctx context.Context, l landing, conflictRetried bool) ([]muster.Event, redo) {
	if l.err != nil && ctx.Err() != nil {
		return w.cancelled(ctx), redo{}
	}
	switch {
	case errors.Is(l.err, muster.ErrBranchMoved):
		return w.stopRun(l.err), redo{}
	case l.err != nil:
		return w.opFailed("integrate the change onto the run branch", l.err, false), redo{}
	case len(l.conflicts) > 0:
		if conflictRetried {
			return w.fail("conflict on integration: "+strings.Join(l.conflicts, ", "), false), redo{}
		}
		if !w.leaseClone(ctx) {
			return w.cancelled(ctx), redo{}
		}
		w.send(muster.Event{Type: muster.EvFixRound, Round: 0, Reason: "conflict", Paths: l.conflicts})
		return nil, redo{conflict: true, feedback: "Your previous change conflicted with work that landed meanwhile, in: " +
			strings.Join(l.conflicts, ", ") + ". The worktree now holds the new tip; redo the task on top of it."}
	case l.failed != "":
		// The change broke a plan-wide gate once merged onto the new
		// tip: fix it there, the worktree holding the merged tree.
		if w.round >= w.cfg.MaxRounds() {
			return w.fail(l.failed, false), redo{}
		}
		if !w.leaseClone(ctx) {
			return w.cancelled(ctx), redo{}
		}
		dir, err := w.d.opts.Workspace.Checkout(ctx, w.slot(), l.merged)
		if ctx.Err() != nil {
			return w.cancelled(ctx), redo{}
		}
		if err != nil {
			return w.opFailed("check out the merged tree in the clone's worktree", err, false), redo{}
		}
		// The clone may have served other tasks meanwhile: its
		// dependencies are set up again for this tree. A failure is not
		// the environment's here (the queue's clone set this tree up, or
		// its failure is what the round is to fix); the change's setup
		// runs after the agent all the same.
		_ = w.d.setupBase(ctx, dir, "the merged tree "+short(l.merged)+" in "+w.slot()+"'s clone", w.cfg)
		w.dir, w.base = dir, l.tip
		return nil, redo{prepared: true, start: w.round + 1, feedback: l.failed + "\n\nYour change passed its checks alone, but merged with work that landed meanwhile it breaks a check. " +
			"The worktree now holds your change merged onto the new tip; fix it there.\n\n" + l.feedback}
	}
	// The queue recorded Integrated (driver/integrate.go).
	w.shareFindings()
	return []muster.Event{{Type: muster.EvTaskSucceeded, Task: w.a.Task, Attempt: w.a.Attempt, Commit: l.merged}}, redo{}
}

// changedPaths lists every path a change touches, in change order.
func changedPaths(c *muster.Change) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range c.Files {
		for _, p := range []string{f.OldPath, f.Path} {
			if p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

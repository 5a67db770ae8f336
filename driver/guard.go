package driver

import (
	"context"
	"strings"

	"github.com/muster-run/muster"
)

// guarded runs the attempt between the workspace guard's begin and end
// (when the workspace has one): a change to the user's repository found
// while it ran fails it, unless its commit had already landed.
func (w *worker) guarded(ctx context.Context) []muster.Event {
	g, ok := w.d.opts.Workspace.(muster.Guard)
	if !ok {
		return w.run(ctx)
	}
	w.guard = g
	w.beginGuard()
	defer w.endGuard()
	final := w.run(ctx)
	if !w.guarding {
		// Its clone went back to the crew while the commit waited, after
		// the check before integration (tampered): nothing of the attempt
		// ran since.
		return final
	}
	found := g.CheckAttempt(context.WithoutCancel(ctx), w.slot())
	if len(found) == 0 {
		return final
	}
	return w.tamperedDuring(final, found)
}

// tamperedDuring is the attempt's final events when the user's
// repository changed while it ran (found). (Apart from guarded, whose
// stack frame held the events here, 848 bytes each, and made every
// worker's stack grow.)
func (w *worker) tamperedDuring(final []muster.Event, found []string) []muster.Event {
	ev := muster.Event{Type: muster.EvViolation, Task: w.a.Task, Attempt: w.a.Attempt, Round: w.round, Reason: muster.ReasonTampered, Paths: found}
	for _, e := range final {
		if e.Type == muster.EvTaskSucceeded && e.Commit != "" {
			// Integrated already (the check before integration was clean):
			// the change came after; say so, the commit stands.
			return append([]muster.Event{ev, {Type: muster.EvWarning, Task: w.a.Task,
				Message: "the user's repository changed after the task's commit landed: " + strings.Join(found, "; ")}}, final...)
		}
	}
	out := []muster.Event{ev}
	for _, e := range final {
		switch e.Type {
		case muster.EvTaskCancelled:
			return append([]muster.Event{ev}, final...)
		case muster.EvTaskSucceeded, muster.EvTaskFailed:
			// The attempt's outcome becomes the tampering (no retry).
		default:
			out = append(out, e)
		}
	}
	return append(out, w.fail(strings.Join(found, "; "), false)...)
}

// tampered checks the user's repository before a commit lands; it returns
// the attempt's final events when something an agent may not change
// changed, else nil.
func (w *worker) tampered(ctx context.Context) []muster.Event {
	g, ok := w.d.opts.Workspace.(muster.Guard)
	if !ok {
		return nil
	}
	found := g.CheckAttempt(ctx, w.slot())
	if len(found) == 0 {
		return nil
	}
	reason := strings.Join(found, "; ")
	w.send(muster.Event{Type: muster.EvViolation, Round: w.round, Reason: muster.ReasonTampered, Paths: found})
	return w.fail(reason, false)
}

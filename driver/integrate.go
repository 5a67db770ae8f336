package driver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/muster-run/muster"
)

// landing is how an integration went: merged is the new tip; conflicts,
// or failed with feedback when the merged tree broke a plan-wide gate
// (the branch then stays at tip).
type landing struct {
	merged, tip string
	conflicts   []string
	failed      string
	feedback    string
	err         error
}

// verifyIntegration reports whether merged trees are gated.
func (w *worker) verifyIntegration() bool {
	v := w.cfg.Run.VerifyIntegration
	return (v == nil || *v) && len(w.cfg.Gates) > 0 && w.d.opts.Gates != nil
}

// land puts the task commit on the run branch; the caller holds the
// integration queue. The merge is computed without moving the branch; a
// fast-forward lands at once (the gates ran on that very tree);
// otherwise the plan-wide gates run on the merged tree in the task's
// worktree, and the branch advances only when none fails where the tip
// passed: the run branch only ever holds trees that passed. Every move
// is a compare-and-swap from the tip muster last left, announced in the
// journal (Integrating) before it is made.
//
// Moves of the branch are not cancelled; gate runs are (an interrupted
// verification leaves the branch where it was).
func (w *worker) land(ctx context.Context, commit string) landing {
	ws := w.d.opts.Workspace
	gctx := ctx
	ctx = context.WithoutCancel(ctx)
	tip, err := ws.Tip(ctx)
	if err != nil {
		return landing{err: err}
	}
	merged, conflicts, err := ws.Merge(ctx, commit, w.base)
	if err != nil || len(conflicts) > 0 {
		return landing{tip: tip, conflicts: conflicts, err: err}
	}
	if tip != w.base && w.verifyIntegration() {
		w.send(muster.Event{Type: muster.EvPhase, Phase: "verifying", Round: w.round})
		dir, err := ws.Checkout(ctx, w.slot(), merged)
		if err != nil {
			return landing{err: fmt.Errorf("check out the merged tree: %w", err)}
		}
		if _, fail, err := w.d.SetupClone(gctx, dir, w.cfg); err != nil {
			return landing{err: err}
		} else if fail != nil {
			return landing{merged: merged, tip: tip, failed: fail.summary() + " on the merged tree",
				feedback: "Setup failed on your change merged onto the new tip:\n" + tail(fail.Result.Output, maxFeedback/2)}
		}
		var fb []string
		failed := ""
		for _, g := range w.cfg.Gates {
			r := w.d.opts.Gates.Run(gctx, dir, g, w.cfg.Run.GateTimeout)
			if gctx.Err() != nil {
				return landing{err: gctx.Err()}
			}
			w.d.gc.put(g, merged, r)
			ev := muster.Event{Type: muster.EvGateRan, Phase: "integration", Gate: g.Name, Passed: &r.Passed,
				Output: tail(r.Output, maxGateOutput), Round: w.round, Commit: merged, Tip: tip}
			if !r.Passed {
				env, _ := gateEnv(g, r, dir)
				charged, newly := w.judge(gctx, g, r, &ev, tip, "the tip", env)
				if w.envFailed != "" {
					w.send(ev)
					return landing{err: &envError{cause: w.envFailed, err: errors.New("a gate could not run")}}
				}
				if charged {
					why := ""
					if len(newly) > 0 {
						why = " (newly failing: " + strings.Join(newly, ", ") + ")"
					}
					fb = append(fb, fmt.Sprintf("Gate %q (%s) failed on the merged tree%s:\n%s", g.Name, g.Command, why, tail(r.Output, maxFeedback/2)))
					if failed == "" {
						failed = "gate " + g.Name + " failed on integration: " + gateSummary(r)
					}
				}
			}
			w.send(ev)
		}
		if err := w.undoGateOutput(ctx, dir, merged, nil); err != nil {
			return landing{err: fmt.Errorf("undo what the gates wrote: %w", err)}
		}
		if failed != "" {
			return landing{merged: merged, tip: tip, failed: failed, feedback: strings.Join(fb, "\n\n")}
		}
	}
	// The move is announced, durably, before it is made: a resume then
	// knows a branch found at merged is muster's own move, and trusts
	// nothing else.
	if err := w.durable(muster.Event{Type: muster.EvIntegrating, Commit: merged, Tip: tip, Round: w.round}); err != nil {
		return landing{err: err}
	}
	if err := ws.Advance(ctx, merged, tip); err != nil {
		return landing{err: err}
	}
	return landing{merged: merged, tip: tip}
}

// fifo is a first-come, first-served lock for the integration queue.
type fifo struct {
	mu    sync.Mutex
	held  bool
	queue []chan struct{}
}

func (f *fifo) lock() {
	f.mu.Lock()
	if !f.held {
		f.held = true
		f.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	f.queue = append(f.queue, ch)
	f.mu.Unlock()
	<-ch
}

func (f *fifo) unlock() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) == 0 {
		f.held = false
		return
	}
	ch := f.queue[0]
	f.queue = f.queue[1:]
	close(ch)
}

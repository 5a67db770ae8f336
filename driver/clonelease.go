package driver

import (
	"context"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// The coder's clone while its commit waits for integration.
//
// Once a round's commit is made (and the user's repository checked), the
// attempt needs its clone no more until the queue's verdict: the queue
// merges and gates in its own clone (queueSlot). So the worker gives the
// clone back to the crew (releaseClone: the guard's attempt on it ends,
// then ExecutorReleased) and the loop may start another task there while
// the queue tests. A verdict that asks for more work (a conflict, or the
// change breaking a plan-wide gate once merged, the bisection's culprit)
// leases a clone of the same executor again (leaseClone: its own clone
// when it is free, else another, waiting for one to come free), and the
// fix round runs there. An attempt that ends without more work releases
// nothing more. A crash while the commit waits leaves a running task
// without a lease of its own, which recovery cancels as interrupted, or
// records as succeeded when the journal holds its integration
// (engine.Orphans).

// releaseClone gives the attempt's clone back to the crew.
func (w *worker) releaseClone() {
	if w.released {
		return
	}
	// The guard's attempt ends before the clone can be another's.
	w.endGuard()
	w.released = true
	w.send(muster.Event{Type: muster.EvExecutorRelease, Executor: w.a.Executor, Clone: w.a.Clone, Role: w.a.Role})
}

// leaseClone leases a clone of the attempt's executor again after
// releaseClone, for a fix round, waiting for one to come free. It
// reports whether the attempt holds a clone (false: ctx ended, or the
// loop grants nothing more). On another clone than before the agent's
// session is not resumed (sessions belong to a directory).
func (w *worker) leaseClone(ctx context.Context) bool {
	if !w.released {
		return true
	}
	for wait := 20 * time.Millisecond; ; wait *= 2 {
		reply := make(chan engine.Lease, 1)
		w.d.msgs <- message{lease: &leaseRequest{task: w.a.Task, role: w.a.Role, exec: w.a.Executor, prefer: w.a.Clone, reply: reply}}
		if l := <-reply; l.Executor != "" {
			if l.Clone != w.a.Clone {
				w.sessionID = ""
			}
			w.a.Clone, w.released = l.Clone, false
			w.beginGuard()
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(min(wait, 2*time.Second)):
		}
	}
}

// beginGuard starts the workspace guard's attempt on the clone (when the
// workspace has a guard).
func (w *worker) beginGuard() {
	if w.guard != nil && !w.guarding {
		w.guard.BeginAttempt(w.slot())
		w.guarding = true
	}
}

// endGuard ends it.
func (w *worker) endGuard() {
	if w.guarding {
		w.guard.EndAttempt(w.slot())
		w.guarding = false
	}
}

// grant answers a lease request: a clone of the role (preferring other
// executors than avoid and avoidAll), or of executor exec (preferring
// clone prefer).
// The lease is durable before the answer.
func (d *Driver) grant(r *leaseRequest) error {
	ex, clone, ok := r.exec, 0, false
	if r.exec != "" {
		clone, ok = engine.FreeClone(d.state, r.exec, r.prefer, d.clock.Now())
	} else {
		ex, clone, ok = engine.FreeSlotAvoiding(d.state, r.role, append([]string{r.avoid}, r.avoidAll...), d.clock.Now())
	}
	if !ok {
		r.reply <- engine.Lease{}
		return nil
	}
	err := d.emit(muster.Event{Type: muster.EvExecutorLeased, Task: r.task, Executor: ex, Clone: clone, Role: r.role})
	if err == nil {
		err = d.sync()
	}
	if err != nil {
		r.reply <- engine.Lease{}
		return err
	}
	r.reply <- engine.Lease{Task: r.task, Executor: ex, Clone: clone, Role: r.role}
	return nil
}

package driver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// Integration: batched, speculative, one batch at a time.
//
// A worker whose commit is accepted hands it to the integration queue
// and waits for its verdict. One waiting worker at a time drives the
// queue (the leader; the lead passes to the first waiter when its batch
// is decided): it takes a batch of waiting commits (engine.SelectBatch:
// queue order, the first always, up to the window, Owns disjoint, no
// task without Owns beside another), merges them onto the tip one after
// another into a chain of candidate commits (a commit that conflicts
// with the chain but not with the tip waits for the next batch), and
// runs the plan-wide gates once, on the chain's top, in the queue's own
// clone (queueSlot), judged against the tip (a failure the tip has too
// is pre-existing, as before).
//
//   - Green: the run branch moves over the whole chain by one
//     compare-and-swap from the tip muster last left; the move is
//     announced first (one synced Integrating naming the chain), then
//     each task commit gets its Integrated. Every tip the branch points
//     at therefore passed each plan-wide gate, or failed it only where
//     the previous tip failed too; the commits inside a batch were gated
//     as part of its top (max_batch = 1 gates each one).
//   - Red: the top is gated once more; a second result that differs is
//     reported as flaky (Warning) and the batch lands when it passes.
//     Otherwise the chain is bisected (engine.Bisection): the commits
//     before the culprit land, the culprit's worker gets a fix round on
//     the new tip (its worktree holding its change merged there) and its
//     next commit enters the queue at the back, and the commits after it
//     go back, unchanged and in order, to the front of the queue.
//
// Pipelined: while a batch's top is gated, the commits that enter the
// queue are merged at once onto a chain that starts at that top, the
// next batch's (nextChain, queuenext.go); nothing of it is gated or
// journaled before the verdict. Green: the next batch is that chain, and
// its gate run starts once the branch has moved, with no merge in
// between. Red, a conflict, or a tip or queue head that is not what the
// chain was built for: it is dropped, and the next batch merges afresh.
//
// Grown while young: a commit that arrives while a batch's first gate run
// is young, and that the batch would take, cuts the run short and the
// batch is formed again with it (batchgrow.go).
//
// The window grows by one after a green batch and halves after a red
// one (engine.NextWindow; [run] max_batch, default 8). A fast-forward
// (the tip is still the commit's base) needs no gate run: the task's own
// gates ran on that very tree. Gate results are cached per commit (one
// tree each). Moves of the branch are not cancelled; gate runs are (an
// interrupted batch leaves the branch where it was and its commits in
// the queue).

// queueSlot is the integration queue's own clone, where gates run on a
// batch's chain: no coder's clone is held for it.
const queueSlot = "muster-queue"

// landing is how an integration went: merged is the task's commit on the
// branch (or, when failed, its change merged onto the new tip tip);
// conflicts, or failed with feedback when the merged tree broke a
// plan-wide gate (the branch then stays at tip).
type landing struct {
	merged, tip string
	conflicts   []string
	failed      string
	feedback    string
	err         error
}

// integration is one task commit in the queue.
type integration struct {
	w      *worker
	ctx    context.Context // the worker's
	seq    int             // arrival order
	commit string
	base   string
	done   chan landing  // the verdict
	lead   chan struct{} // this waiter drives the queue next
	cutAt  time.Time     // the start of its first gate run that was cut short (batchgrow.go); q.mu
}

// queue is the integration queue: the commits waiting, in order, and
// whether a batch is being decided.
type queue struct {
	mu      sync.Mutex
	waiting []*integration
	busy    bool
	seq     int
	window  int
	steps   int        // gate runs of the queue (tests)
	next    *nextChain // the next batch's chain, built while a batch is gated (queuenext.go)
	gating  *gating    // the batch whose young gate run a newcomer may cut short (batchgrow.go)
}

// verifyIntegration reports whether merged trees are gated.
func (d *Driver) verifyIntegration(cfg *muster.Config) bool {
	v := cfg.Run.VerifyIntegration
	return (v == nil || *v) && len(cfg.Gates) > 0 && d.opts.Gates != nil
}

// integrate hands the task commit to the queue and waits for its
// verdict, driving the queue when its turn comes.
func (w *worker) integrate(ctx context.Context, commit string) landing {
	q := &w.d.q
	it := &integration{w: w, ctx: ctx, commit: commit, base: w.base, done: make(chan landing, 1), lead: make(chan struct{}, 1)}
	q.mu.Lock()
	q.seq++
	it.seq = q.seq
	q.waiting = append(q.waiting, it)
	if !q.busy {
		q.busy = true
		it.lead <- struct{}{}
	}
	w.d.growGating()
	next := q.next
	q.mu.Unlock()
	// In the queue now (the phase says so only once it is true).
	w.send(muster.Event{Type: muster.EvPhase, Phase: "integrating", Round: w.round})
	// A batch is being gated: the commit joins the next one's chain now.
	w.d.extendNext(context.WithoutCancel(ctx), next)
	for {
		select {
		case l := <-it.done:
			return l
		case <-it.lead:
			w.d.driveBatch(ctx, it)
		}
	}
}

// driveBatch takes one batch from the queue, decides it, and passes the
// lead on (or leaves the queue idle).
func (d *Driver) driveBatch(ctx context.Context, self *integration) {
	q := &d.q
	n := d.takeNext()
	q.mu.Lock()
	limit := max(1, self.w.cfg.MaxBatch())
	if _, ok := d.opts.Workspace.(muster.ChainMerger); !ok {
		limit = 1
	}
	if q.window == 0 || q.window > limit {
		q.window = limit
	}
	take := d.selectBatch(q.window)
	var prepared []link
	if n != nil && len(n.links) > 0 && n.heads(q.waiting, take) {
		// The chain built while the last batch was gated: the batch is
		// its commits (those that arrived since wait for the next one;
		// when the tip is not the chain's base after all, decideBatch
		// merges these commits afresh).
		prepared, take = n.links, take[:len(n.links)]
	}
	batch, rest := splitTaken(q.waiting, take)
	q.waiting = rest
	q.mu.Unlock()

	onto := ""
	if prepared != nil {
		onto = n.onto
	}
	back := d.decideBatch(ctx, self, batch, onto, prepared)

	q.mu.Lock()
	defer q.mu.Unlock()
	if len(back) > 0 {
		sort.Slice(back, func(i, j int) bool { return back[i].seq < back[j].seq })
		q.waiting = append(back, q.waiting...)
	}
	if len(q.waiting) == 0 {
		q.busy = false
		return
	}
	q.waiting[0].lead <- struct{}{}
}

// selectBatch returns the indices in the queue of the commits a batch
// takes with window (engine.SelectBatch). The caller holds q.mu.
func (d *Driver) selectBatch(window int) []int {
	return d.selectOf(nil, d.q.waiting, window)
}

// selectOf returns the indices engine.SelectBatch takes, with window,
// from first followed by rest.
//
// SelectBatch is greedy in queue order, so on a prefix that fills the
// window it answers as on the whole list: candidates are made for a
// prefix of rest, doubled until the window fills or rest ends (with
// hundreds waiting, one candidate per waiting commit at every batch and
// every arrival was a fifth of the scheduler's CPU).
func (d *Driver) selectOf(first, rest []*integration, window int) []int {
	overlap := d.overlap()
	cands := make([]engine.BatchCandidate, 0, len(first)+min(len(rest), 4*max(1, window)))
	for _, it := range first {
		cands = append(cands, engine.BatchCandidate{Task: it.w.task.ID, Owns: it.w.task.Owns})
	}
	for n := min(len(rest), 4*max(1, window)); ; n = min(len(rest), 2*n) {
		for _, it := range rest[len(cands)-len(first) : n] {
			cands = append(cands, engine.BatchCandidate{Task: it.w.task.ID, Owns: it.w.task.Owns})
		}
		take := engine.SelectBatch(cands, window, overlap)
		if len(take) >= window || n == len(rest) {
			return take
		}
	}
}

// overlap says whether two Owns lists can name one path (Options.Overlap;
// without it, always).
func (d *Driver) overlap() func(a, b []string) bool {
	if d.opts.Overlap == nil {
		return func(a, b []string) bool { return true }
	}
	return d.opts.Overlap
}

// splitTaken splits waiting into the integrations at the indices take
// (ascending) and the rest, both in queue order.
func splitTaken(waiting []*integration, take []int) (batch, rest []*integration) {
	if len(take) > 0 && take[len(take)-1] == len(take)-1 {
		// The common case, a prefix: the rest stays as it is.
		return append([]*integration(nil), waiting[:len(take)]...), waiting[len(take):]
	}
	batch = make([]*integration, 0, len(take))
	for i, it := range waiting {
		if len(batch) < len(take) && take[len(batch)] == i {
			batch = append(batch, it)
		} else {
			rest = append(rest, it)
		}
	}
	return batch, rest
}

// link is one commit of a batch's chain: the integration and its commit
// merged onto the link before it (the first onto the tip).
type link struct {
	it     *integration
	merged string
}

// decideBatch builds the batch's chain, gates it and lands what passed;
// it gives every integration of the batch its verdict, or returns it to
// go back to the front of the queue.
//
// prepared, when not nil, is the batch's chain as it was built onto
// onto while the batch before was gated: it is the chain when onto is
// still the tip, else the batch is merged afresh.
func (d *Driver) decideBatch(ctx context.Context, self *integration, batch []*integration, onto string, prepared []link) (back []*integration) {
	gctx := ctx
	ctx = context.WithoutCancel(ctx)
	ws := d.opts.Workspace
	tip, err := ws.Tip(ctx)
	if err != nil {
		for _, it := range batch {
			it.done <- landing{err: err}
		}
		return nil
	}
	var chain []link
	if prepared != nil && onto == tip {
		chain = prepared
	} else {
		chain, back = d.buildChain(ctx, tip, batch)
	}
	if len(chain) == 0 {
		return back
	}
	lo := 0
	if chain[0].it.base == tip {
		lo = 1 // a fast-forward: the task's own gates ran on this tree
	}
	cfg := self.w.cfg
	if !d.verifyIntegration(cfg) || len(chain) == lo {
		d.landChain(ctx, self, tip, chain)
		return back
	}
	for _, l := range chain[lo:] {
		l.it.w.send(muster.Event{Type: muster.EvPhase, Phase: "verifying", Round: l.it.w.round})
	}
	// The next batch's chain is built onto this top while it is gated.
	d.openNext(ctx, cfg, chain[len(chain)-1].merged)
	rctx, young, grown := d.startGating(gctx, cfg, chain)
	v := treeVerdict{err: context.Canceled} // never a verdict: cut before its run
	if !grown {
		v = d.gateTree(rctx, chain, len(chain), tip, false)
	}
	if d.stopGating(young) && gctx.Err() == nil {
		// Cut short for a bigger batch: every commit goes back.
		d.closeNext(ctx, false)
		for _, l := range chain {
			back = append(back, l.it)
		}
		return back
	}
	if v.err == nil && v.failed != "" {
		second := d.gateTree(gctx, chain, len(chain), tip, true)
		if second.err == nil && second.failed == "" {
			self.w.send(muster.Event{Type: muster.EvWarning, Task: chain[len(chain)-1].it.w.task.ID, Commit: chain[len(chain)-1].merged,
				Message: "flaky: the plan-wide gates failed on the batch's top, then passed on the same tree; the batch lands"})
		}
		v = second
	}
	green := v.err == nil && v.failed == ""
	if green {
		d.setWindow(cfg, true)
	}
	d.closeNext(ctx, green && len(back) == 0)
	if v.err != nil {
		return d.abandonBatch(gctx, self, chain, back, v.err)
	}
	if green {
		d.landChain(ctx, self, tip, chain)
		return back
	}
	d.setWindow(cfg, false)
	return append(back, d.bisect(gctx, ctx, self, tip, chain, lo, v)...)
}

// buildChain merges the batch onto the tip one after another. A commit
// that conflicts with the tip gets its conflicts as its verdict; one
// that conflicts only with the chain goes back to the queue.
func (d *Driver) buildChain(ctx context.Context, tip string, batch []*integration) (chain []link, back []*integration) {
	ws := d.opts.Workspace
	cm, chains := ws.(muster.ChainMerger)
	top := tip
	for _, it := range batch {
		var merged string
		var conflicts []string
		var err error
		if chains {
			merged, conflicts, err = cm.MergeOnto(ctx, top, it.commit, it.base)
		} else {
			merged, conflicts, err = ws.Merge(ctx, it.commit, it.base)
		}
		switch {
		case err != nil:
			it.done <- landing{tip: tip, err: err}
		case len(conflicts) > 0 && len(chain) == 0:
			it.done <- landing{tip: tip, conflicts: conflicts}
		case len(conflicts) > 0:
			back = append(back, it)
		default:
			chain = append(chain, link{it: it, merged: merged})
			top = merged
		}
	}
	return chain, back
}

// abandonBatch ends a batch whose gate run was cancelled or could not
// run: the branch stays; a gate that could not run stops the run
// (every member's verdict says why); a cancelled run gives the leader
// its cancellation and puts the others back in the queue.
func (d *Driver) abandonBatch(gctx context.Context, self *integration, chain []link, back []*integration, err error) []*integration {
	var env *envError
	for _, l := range chain {
		switch {
		case errors.As(err, &env) || l.it == self || l.it.ctx.Err() != nil:
			l.it.done <- landing{err: err}
		default:
			back = append(back, l.it)
		}
	}
	return back
}

// bisect finds the culprit of a red chain, lands the commits before it,
// gives the culprit its fix round on the new tip and returns the commits
// after it to the queue.
func (d *Driver) bisect(gctx, ctx context.Context, self *integration, tip string, chain []link, lo int, top treeVerdict) []*integration {
	b := engine.Bisection{Lo: lo, Hi: len(chain)}
	failedAt := map[int]treeVerdict{len(chain): top}
	for !b.Done() {
		k := b.Next()
		v := d.gateTree(gctx, chain, k, tip, false)
		if v.err != nil {
			return d.abandonBatch(gctx, self, chain, nil, v.err)
		}
		if v.failed != "" {
			failedAt[k] = v
		}
		b = b.Record(k, v.failed != "")
	}
	c := b.Culprit()
	newTip := tip
	if c > 1 {
		if !d.landChain(ctx, self, tip, chain[:c-1]) {
			var back []*integration
			for _, l := range chain[c-1:] {
				back = append(back, l.it)
			}
			return back
		}
		newTip = chain[c-2].merged
	}
	v := failedAt[c]
	chain[c-1].it.done <- landing{merged: chain[c-1].merged, tip: newTip, failed: v.failed, feedback: v.feedback}
	var back []*integration
	for _, l := range chain[c:] {
		back = append(back, l.it)
	}
	return back
}

// landChain moves the run branch from tip over chain to its top: the
// move announced durably first (one Integrating naming the chain), then
// the compare-and-swap, then one Integrated per task commit, and each
// integration's verdict. It reports whether the branch moved; when it
// did not, every member has its error as its verdict.
func (d *Driver) landChain(ctx context.Context, self *integration, tip string, chain []link) bool {
	ws := d.opts.Workspace
	top := chain[len(chain)-1]
	ev := muster.Event{Type: muster.EvIntegrating, Task: top.it.w.task.ID, Attempt: top.it.w.a.Attempt, Commit: top.merged, Tip: tip, Round: top.it.w.round}
	if len(chain) > 1 {
		ev.Task, ev.Attempt = chain[0].it.w.task.ID, chain[0].it.w.a.Attempt
		for _, l := range chain {
			ev.Chain = append(ev.Chain, muster.ChainLink{Task: l.it.w.task.ID, Commit: l.merged})
		}
	}
	// The move is announced, durably, before it is made: a resume then
	// knows a branch found at the top is muster's own move, and trusts
	// nothing else.
	err := self.w.durable(ev)
	if err == nil {
		if len(chain) > 1 {
			d.crash.at(CrashBatchAnnounced)
		}
		err = ws.Advance(ctx, top.merged, tip)
	}
	if err != nil {
		for _, l := range chain {
			l.it.done <- landing{err: err}
		}
		return false
	}
	d.crash.at(CrashIntegrate)
	if len(chain) > 1 {
		d.crash.at(CrashBatch)
	}
	evs := make([]muster.Event, len(chain))
	for i, l := range chain {
		evs[i] = muster.Event{Type: muster.EvIntegrated, Task: l.it.w.task.ID, Attempt: l.it.w.a.Attempt, Commit: l.merged, Tip: top.merged}
	}
	self.w.send(evs...)
	for _, l := range chain {
		l.it.done <- landing{merged: l.merged, tip: top.merged}
	}
	return true
}

// setWindow adapts the batch window after a verdict.
func (d *Driver) setWindow(cfg *muster.Config, green bool) {
	d.q.mu.Lock()
	defer d.q.mu.Unlock()
	d.q.window = engine.NextWindow(d.q.window, max(1, cfg.MaxBatch()), green)
}

// treeVerdict is the plan-wide gates' judgement of one tree: failed (with
// the coder's feedback) when a gate failed that passed on the tip.
type treeVerdict struct {
	failed, feedback string
	err              error
}

// gateTree runs the plan-wide gates on prefix k of the chain (the tip
// with its first k commits merged) in the queue's clone, judged against
// the tip; fresh runs them even when their results are cached (the
// second look at a red top). The GateRan events are the k-th task's.
func (d *Driver) gateTree(gctx context.Context, chain []link, k int, tip string, fresh bool) treeVerdict {
	l := chain[k-1]
	w := l.it.w
	cfg := w.cfg
	ctx := context.WithoutCancel(gctx)
	var dir string
	var fb []string
	failed := ""
	for _, g := range cfg.Gates {
		r, cached := d.gc.get(g, l.merged)
		if !cached || fresh {
			if dir == "" {
				var err error
				if dir, err = d.opts.Workspace.Checkout(ctx, queueSlot, l.merged); err != nil {
					return treeVerdict{err: fmt.Errorf("check out the merged tree: %w", err)}
				}
				// The queue's clone gets the project's [setup] like any
				// clone (each Checkout resets it, so gate output never
				// lingers there).
				if _, fail, err := d.SetupClone(gctx, dir, cfg); err != nil {
					return treeVerdict{err: err}
				} else if fail != nil {
					return treeVerdict{failed: fail.summary() + " on the merged tree",
						feedback: "Setup failed on your change merged onto the new tip:\n" + tail(fail.Result.Output, maxFeedback/2)}
				}
				d.q.mu.Lock()
				d.q.steps++
				d.q.mu.Unlock()
			}
			r = d.opts.Gates.Run(gctx, dir, g, cfg.Run.GateTimeout)
			if gctx.Err() != nil {
				return treeVerdict{err: gctx.Err()}
			}
			d.gc.put(g, l.merged, r)
		}
		ev := muster.Event{Type: muster.EvGateRan, Phase: "integration", Gate: g.Name, Passed: &r.Passed,
			Output: tail(r.Output, maxGateOutput), Round: w.round, Commit: l.merged, Tip: tip}
		if !r.Passed {
			env, _ := gateEnv(g, r, dir)
			charged, newly := w.judge(gctx, g, r, &ev, tip, "the tip", env)
			if w.envFailed != "" {
				w.send(ev)
				return treeVerdict{err: &envError{cause: w.envFailed, err: errors.New("a gate could not run")}}
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
		if !cached || fresh {
			w.send(ev)
		}
	}
	return treeVerdict{failed: failed, feedback: strings.Join(fb, "\n\n")}
}

package driver

import (
	"context"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// A batch grows while its gate run is young.
//
// Commits come in bursts: coders that started together finish together,
// at the start of a run and after any quiet spell. The first commit of a
// burst finds the queue idle and its batch's gate run starts at once; the
// others, milliseconds later, would wait for all of that run and then for
// the next one's start. So while a batch's first gate run is young (it
// has run less than engine.GrowShare of what the plan-wide gates took
// last), a commit that arrives and that the batch, formed again, would
// take (the window, Owns) cuts the run short: the batch goes back to the
// front of the queue and is formed again with the newcomer. The clock
// starts at the first gate run of any of its commits, however often it
// was cut since, so a batch spends at most that share of one gate run on
// runs that were cut. Nothing of a cut run is cached, and its verdict,
// had it come at the last moment, is dropped: what lands was gated by a
// run that was not cut. One batch at a time is gated, as before.

// gating is the batch whose first gate run is under way, while it may
// still grow.
type gating struct {
	batch    []*integration // its commits, in chain order
	window   int
	start    time.Time // the first gate run of any of its commits
	expected time.Duration
	cancel   context.CancelFunc
	cut      bool // cut short for a bigger batch
}

// startGating registers the batch of chain, about to be gated the first
// time, as one that may grow, and returns the context its gate run
// takes (cancelled when it is cut). A batch whose gates' time is not
// known yet, or whose clock has run out, is not registered (g nil).
// grown says that commits which came while the batch was formed (after
// its selection, before its gate run) already make it bigger: it is cut
// before its gate run starts.
func (d *Driver) startGating(gctx context.Context, cfg *muster.Config, chain []link) (ctx context.Context, g *gating, grown bool) {
	expected := d.gc.expected(cfg.Gates)
	q := &d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	now := d.clock.Now()
	g = &gating{window: q.window, start: now, expected: expected}
	for _, l := range chain {
		g.batch = append(g.batch, l.it)
		if t := l.it.cutAt; !t.IsZero() && t.Before(g.start) {
			g.start = t
		}
	}
	if len(g.batch) >= g.window || !engine.Grow(now.Sub(g.start), expected) {
		return gctx, nil, false
	}
	ctx, g.cancel = context.WithCancel(gctx)
	q.gating = g
	if d.grows(g) {
		g.cut = true
		g.cancel()
		return ctx, g, true
	}
	return ctx, g, false
}

// stopGating ends g's chance to grow, once its gate run is over; it
// reports whether the run was cut short (the batch then goes back to the
// queue: its commits keep the start of their first gate run).
func (d *Driver) stopGating(g *gating) (cut bool) {
	if g == nil {
		return false
	}
	q := &d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	q.gating = nil
	g.cancel()
	if g.cut {
		for _, it := range g.batch {
			if it.cutAt.IsZero() {
				it.cutAt = g.start
			}
		}
	}
	return g.cut
}

// growGating cuts the young gate run short when the batch, formed again
// with the commits now waiting, would take more than it holds (and all
// it holds). The caller holds q.mu, with the newcomer in q.waiting.
func (d *Driver) growGating() {
	g := d.q.gating
	if g == nil || g.cut || !engine.Grow(d.clock.Now().Sub(g.start), g.expected) || !d.grows(g) {
		return
	}
	g.cut = true
	g.cancel()
}

// grows reports whether g's batch, formed again with the commits waiting
// now, would take all it holds and more. The caller holds q.mu.
func (d *Driver) grows(g *gating) bool {
	if len(d.q.waiting) == 0 {
		return false
	}
	take := d.selectOf(g.batch, d.q.waiting, g.window)
	if len(take) <= len(g.batch) {
		return false
	}
	for i := range g.batch {
		if take[i] != i {
			return false
		}
	}
	return true
}

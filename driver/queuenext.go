package driver

import (
	"context"
	"sync"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// The next batch's chain, built while the current batch is gated.
//
// Merging is cheap and gating is not, so the merges of the next batch
// need not wait for the verdict: while the gates run on a batch's top,
// each commit that arrives in the queue is merged at once onto the chain
// of the batch after (nextChain), which starts at that top, the tip the
// run branch will have if the batch lands. Nothing of it is gated or
// journaled before the verdict: one batch at a time is gated, as before.
// When the batch is green, the next one takes that chain as it is (its
// members are the batch engine.SelectBatch takes, or a prefix of it) and
// its gate run starts as soon as the branch has moved; commits that
// arrived too late for it wait for the batch after. When the batch is
// red, or anything else differs (the tip, the head of the queue), the
// chain is dropped and the next batch merges its commits afresh; the
// commits merged for nothing were never anywhere but in the object store.

// nextChain is the chain of the batch after the one being gated.
type nextChain struct {
	mu     sync.Mutex // held while a link is merged
	onto   string     // the gated batch's top
	window int        // the window after a green verdict
	links  []link
	closed bool // no more links: taken, or dropped
}

// openNext starts the next batch's chain on top, the gated batch's top,
// and links the commits already waiting (in its own goroutine: the gate
// run starts meanwhile). Each commit that arrives while the batch is
// gated links itself (integrate).
func (d *Driver) openNext(ctx context.Context, cfg *muster.Config, top string) {
	if _, ok := d.opts.Workspace.(muster.ChainMerger); !ok {
		return
	}
	q := &d.q
	q.mu.Lock()
	n := &nextChain{onto: top, window: engine.NextWindow(q.window, max(1, cfg.MaxBatch()), true)}
	q.next = n
	q.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	go d.extendNext(ctx, n)
}

// extendNext merges onto n the waiting commits the next batch takes and
// n does not hold yet, in queue order, until there are none, n is
// closed, or a merge does not give a clean link (n then closes: the next
// batch merges the rest itself).
func (d *Driver) extendNext(ctx context.Context, n *nextChain) {
	cm, ok := d.opts.Workspace.(muster.ChainMerger)
	if n == nil || !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for !n.closed {
		it, more := d.nextToLink(n)
		if !more {
			return
		}
		top := n.onto
		if len(n.links) > 0 {
			top = n.links[len(n.links)-1].merged
		}
		merged, conflicts, err := cm.MergeOnto(ctx, top, it.commit, it.base)
		if err != nil || len(conflicts) > 0 {
			n.closed = true
			return
		}
		n.links = append(n.links, link{it: it, merged: merged})
	}
}

// nextToLink returns the waiting commit n links next: the next one the
// batch after would take. more is false when n holds them all, or when
// what it holds is no longer what that batch takes (n then closes).
// The caller holds n.mu.
func (d *Driver) nextToLink(n *nextChain) (it *integration, more bool) {
	q := &d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	take := d.selectBatch(n.window)
	if !n.heads(q.waiting, take) {
		n.closed = true
		return nil, false
	}
	if len(take) == len(n.links) {
		return nil, false
	}
	return q.waiting[take[len(n.links)]], true
}

// heads reports whether n's links are the first of the batch take (the
// indices in waiting SelectBatch returned), in order.
func (n *nextChain) heads(waiting []*integration, take []int) bool {
	if len(n.links) > len(take) {
		return false
	}
	for i, l := range n.links {
		if waiting[take[i]] != l.it {
			return false
		}
	}
	return true
}

// closeNext ends the next batch's chain at a verdict. Green: the commits
// still unlinked that the next batch takes are linked first (before the
// branch moves), and the chain is kept for the next batch. Otherwise it
// is dropped.
func (d *Driver) closeNext(ctx context.Context, green bool) {
	q := &d.q
	q.mu.Lock()
	n := q.next
	if !green {
		q.next = nil
	}
	q.mu.Unlock()
	if n == nil {
		return
	}
	if green {
		d.extendNext(context.WithoutCancel(ctx), n)
	}
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
}

// takeNext returns the chain prepared for the batch about to be
// selected (nil when none is), closed: no commit links itself to it any
// more.
func (d *Driver) takeNext() *nextChain {
	q := &d.q
	q.mu.Lock()
	n := q.next
	q.next = nil
	q.mu.Unlock()
	if n != nil {
		n.mu.Lock() // a merge under way ends first
		n.closed = true
		n.mu.Unlock()
	}
	return n
}

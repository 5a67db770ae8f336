package driver

import (
	"time"
)

// Gathering a batch: commits on their way to the queue.
//
// Tasks that start together tend to finish together: a wave of clones
// whose agents and gates took about as long reaches the queue within a
// few tens of milliseconds. Taken as it stands, the queue would gate the
// first commit of the wave alone and make the others wait out that whole
// gate run (a test suite: minutes) before their own. So a batch that
// will be gated, and whose window is not full, waits while commits are
// on their way: an attempt counts as arriving from the moment its review
// passed (its commit is being written, its clone checked) until it is in
// the queue or has ended otherwise. The wait is bounded (gatherLimit):
// an arriving commit that takes longer goes to the next batch, as
// before. Nothing waits when no plan-wide gate runs on integration, or
// when nothing is on its way.

// gatherLimit bounds how long a batch waits for arriving commits.
var gatherLimit = 250 * time.Millisecond

// arrive marks w's commit as on its way to the queue.
func (q *queue) arrive(w *worker) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !w.arriving {
		w.arriving = true
		q.arriving++
	}
}

// settle ends w's arrival (in the queue, or not coming); the caller
// holds q.mu.
func (q *queue) settle(w *worker) {
	if !w.arriving {
		return
	}
	w.arriving = false
	q.arriving--
	q.changed()
}

// settleLocked is settle taking q.mu.
func (q *queue) settleLocked(w *worker) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.settle(w)
}

// changed wakes a batch gathering (the caller holds q.mu).
func (q *queue) changed() {
	if q.moved != nil {
		close(q.moved)
		q.moved = nil
	}
}

// gather waits, up to limit, while commits are on their way to the queue
// and fewer than window wait in it.
func (q *queue) gather(window int, limit time.Duration) {
	var timer *time.Timer
	for {
		q.mu.Lock()
		if q.arriving == 0 || len(q.waiting) >= window {
			q.mu.Unlock()
			break
		}
		if q.moved == nil {
			q.moved = make(chan struct{})
		}
		ch := q.moved
		q.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(limit)
		}
		select {
		case <-ch:
			continue
		case <-timer.C:
		}
		break
	}
	if timer != nil {
		timer.Stop()
	}
}

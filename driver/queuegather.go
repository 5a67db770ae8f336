package driver

import (
	"context"
	"time"
)

// Gathering a batch: commits on their way to the queue.
//
// Tasks that start together tend to finish together: a wave of clones
// whose agents and gates took about as long reaches the queue within a
// short while. Taken as it stands, the queue would gate the first commit
// of the wave alone and make the others wait out that whole gate run (a
// test suite: minutes) before their own. So a batch that will be gated,
// and whose window is not full, waits for commits on their way:
//
//   - an attempt past its gates, or whose commit is being written (its
//     review passed), until it is in the queue, goes to a review or a fix
//     round, or has ended;
//   - an attempt in its own gates that is due within the wait: its gates
//     started at least as long ago as the attempts' gates have taken so
//     far in the run, on average, less the wait left.
//
// The wait is bounded by a quarter of the queue's last gate run, and at
// least gatherMin (gatherMax at most): waiting that long is worth it only
// when it saves a commit a whole gate run. A commit that comes later goes
// to the next batch, as before. Nothing waits when nothing is on its way
// or no plan-wide gate runs on integration.

// Bounds of the wait for commits on their way (gatherLimit).
var (
	gatherMin = 250 * time.Millisecond
	gatherMax = 30 * time.Second
)

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

// gating marks w as in its gates from now; the function it returns ends
// that, counts how long they took, and marks w's commit as on its way:
// what follows the gates is the commit, or a review or fix round, which
// settle it (worker.review, worker.execute), or the attempt's end.
func (q *queue) gating(w *worker) func() {
	start := time.Now()
	q.mu.Lock()
	if q.inGates == nil {
		q.inGates = map[*worker]time.Time{}
	}
	q.inGates[w] = start
	q.mu.Unlock()
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		delete(q.inGates, w)
		q.gatesTook += time.Since(start)
		q.gatesRuns++
		if !w.arriving {
			w.arriving = true
			q.arriving++
		}
	}
}

// gatedFor records how long one gate run of the queue took.
func (q *queue) gatedFor(d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lastGate = d
}

// gatherLimit is how long a batch may wait for commits on their way: a
// quarter of the queue's last gate run, within [gatherMin, gatherMax].
// The caller holds q.mu.
func (q *queue) gatherLimit() time.Duration {
	return min(max(q.lastGate/4, gatherMin), gatherMax)
}

// onTheirWay reports whether a commit is being written, or an attempt in
// its gates is due by the deadline. The caller holds q.mu.
func (q *queue) onTheirWay(deadline time.Time) bool {
	if q.arriving > 0 {
		return true
	}
	if q.gatesRuns == 0 {
		return false // no measure yet of how long gates take
	}
	typical := q.gatesTook / time.Duration(q.gatesRuns)
	for _, start := range q.inGates {
		if due := start.Add(typical); due.Before(deadline) {
			return true
		}
	}
	return false
}

// changed wakes a batch gathering (the caller holds q.mu).
func (q *queue) changed() {
	if q.moved != nil {
		close(q.moved)
		q.moved = nil
	}
}

// gather waits, up to gatherLimit, while commits are on their way to the
// queue and fewer than window wait in it, and ctx is not done.
func (q *queue) gather(ctx context.Context, window int) {
	q.mu.Lock()
	deadline := time.Now().Add(q.gatherLimit())
	q.mu.Unlock()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		q.mu.Lock()
		if len(q.waiting) >= window || !q.onTheirWay(deadline) {
			q.mu.Unlock()
			return
		}
		if q.moved == nil {
			q.moved = make(chan struct{})
		}
		ch := q.moved
		q.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

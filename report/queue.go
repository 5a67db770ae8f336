package report

import (
	"sort"
	"time"

	"github.com/muster-run/muster"
)

// IntegrationWait is how long one task commit waited to integrate: from
// its Committed to the start of the last gate run that covered it before
// its verdict (its "verifying" phase, whether the run was its own or its
// batch's: a batch's run cut short for a bigger batch, or one whose
// verdict sent the commit back to the queue unchanged, does not end the
// wait), or to the move of the run branch over it when no gate ran (a
// fast-forward, or no plan-wide gates).
type IntegrationWait struct {
	Run     string        `json:"run"`
	Task    muster.TaskID `json:"task"`
	Seconds float64       `json:"integration_wait_seconds"`
}

// addIntegrationWaits folds every run's integration waits and their
// p50 and p95 into r.
func (r *Report) addIntegrationWaits(runs [][]muster.Event) {
	var all []float64
	for _, events := range runs {
		w := waits{committed: map[muster.TaskID]time.Time{}, verifying: map[muster.TaskID]time.Time{}}
		for _, e := range events {
			w.fold(e)
		}
		w.flush()
		r.IntegrationWaits = append(r.IntegrationWaits, w.out...)
		for _, x := range w.out {
			all = append(all, x.Seconds)
		}
	}
	r.IntegrationWaitP50 = quantile(all, 0.50)
	r.IntegrationWaitP95 = quantile(all, 0.95)
}

// waits follows one run's task commits through the queue.
type waits struct {
	run       string
	committed map[muster.TaskID]time.Time // waiting
	verifying map[muster.TaskID]time.Time // the start of the last gate run over it
	out       []IntegrationWait
}

func (w *waits) fold(e muster.Event) {
	switch {
	case e.Type == muster.EvRunStarted:
		w.run = e.Run
	case e.Type == muster.EvCommitted:
		// A commit after a gate run gave no move: that run found the
		// one before red (the fix round's commit waits anew).
		w.end(e.Task, time.Time{})
		w.committed[e.Task] = e.Time
	case e.Type == muster.EvPhase && e.Phase == "verifying":
		if _, ok := w.committed[e.Task]; ok {
			w.verifying[e.Task] = e.Time
		}
	case e.Type == muster.EvIntegrating:
		w.end(e.Task, e.Time)
		for _, l := range e.Chain {
			w.end(l.Task, e.Time)
		}
	}
}

// end ends the wait of id's commit: at its last gate run, else at moved
// (none when zero).
func (w *waits) end(id muster.TaskID, moved time.Time) {
	c, ok := w.committed[id]
	if !ok {
		return
	}
	at, gated := w.verifying[id]
	if !gated {
		if moved.IsZero() {
			return
		}
		at = moved
	}
	delete(w.committed, id)
	delete(w.verifying, id)
	w.out = append(w.out, IntegrationWait{Run: w.run, Task: id, Seconds: max(0, at.Sub(c).Seconds())})
}

// flush ends, at the end of the journal, the waits of the commits a gate
// run covered that have no verdict there.
func (w *waits) flush() {
	ids := make([]muster.TaskID, 0, len(w.verifying))
	for id := range w.verifying {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		w.end(id, time.Time{})
	}
}

// quantile is the q-quantile (0..1) of xs by nearest rank; 0 for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

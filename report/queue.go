package report

import (
	"sort"
	"time"

	"github.com/muster-run/muster"
)

// IntegrationWait is how long one task commit waited to integrate: from
// its Committed to the start of the gate run that covered it (its
// "verifying" phase, whether the run was its own or its batch's), or to
// the move of the run branch over it when no gate ran (a fast-forward,
// or no plan-wide gates).
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
		run := ""
		committed := map[muster.TaskID]time.Time{}
		covered := func(id muster.TaskID, at time.Time) {
			c, ok := committed[id]
			if !ok {
				return
			}
			delete(committed, id)
			s := max(0, at.Sub(c).Seconds())
			r.IntegrationWaits = append(r.IntegrationWaits, IntegrationWait{Run: run, Task: id, Seconds: s})
			all = append(all, s)
		}
		for _, e := range events {
			switch {
			case e.Type == muster.EvRunStarted:
				run = e.Run
			case e.Type == muster.EvCommitted:
				committed[e.Task] = e.Time
			case e.Type == muster.EvPhase && e.Phase == "verifying":
				covered(e.Task, e.Time)
			case e.Type == muster.EvIntegrating:
				covered(e.Task, e.Time)
				for _, l := range e.Chain {
					covered(l.Task, e.Time)
				}
			}
		}
	}
	r.IntegrationWaitP50 = quantile(all, 0.50)
	r.IntegrationWaitP95 = quantile(all, 0.95)
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

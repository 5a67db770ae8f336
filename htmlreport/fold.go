package htmlreport

import (
	"sort"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/runview"
)

// span is a clone's time on one task: a lease, or an attempt when the
// journal has no leases.
type span struct {
	Slot    string
	Task    muster.TaskID
	Role    muster.Role
	Attempt int
	Start   time.Time
	End     time.Time
	Outcome string // a task state, "retried" or "review"
	// Worker is the fleet worker's "worker/executor#clone" ("": local).
	Worker string
}

// costPoint is the run's cumulative cost after one TokensUsed.
type costPoint struct {
	Time   time.Time
	Micros int64
}

// run is the fold of a journal that the report draws: the shared fold
// plus the clones' time spans and the cost by model and over time.
type run struct {
	*runview.Run

	spans   []*span
	open    map[string]*span // slot -> open span
	byModel map[string]*muster.Usage
	models  []string
	cost    []costPoint
	leased  bool // the journal records leases (else spans are attempts)
	// gaps are the stretches no muster ran the run (crash or interrupt
	// until the resume): left out of durations, marked on the timeline.
	gaps []muster.Gap
}

func fold(events []muster.Event) *run {
	r := &run{Run: runview.New(), open: map[string]*span{}, byModel: map[string]*muster.Usage{}}
	for i := range events {
		r.apply(&events[i])
	}
	r.gaps = muster.Gaps(events)
	end := r.End
	if end.IsZero() {
		end = r.last(events)
	}
	for _, c := range r.Clones {
		if s := r.open[c.Slot]; s != nil {
			s.End = end
			if t := r.Tasks[s.Task]; t != nil && s.Role != muster.RoleReviewer {
				s.Outcome = string(t.State)
			}
		}
	}
	if r.End.IsZero() {
		r.End = end
	}
	if r.State == "" {
		r.State = muster.RunRunning
	}
	return r
}

func (r *run) last(events []muster.Event) time.Time {
	for i := len(events) - 1; i >= 0; i-- {
		if !events[i].Time.IsZero() {
			return events[i].Time
		}
	}
	return r.Start
}

func (r *run) openSpan(e *muster.Event, role muster.Role) {
	slot := e.Slot()
	if slot == "" {
		return
	}
	if s := r.open[slot]; s != nil {
		if s.Task == e.Task {
			return // a lease already covers this attempt
		}
		s.End = e.Time
	}
	if role == "" {
		role = muster.RoleCoder
	}
	s := &span{Slot: slot, Task: e.Task, Role: role, Attempt: e.Attempt, Start: e.Time, Outcome: string(muster.StateRunning)}
	if role == muster.RoleReviewer {
		s.Outcome = "review"
	}
	r.open[slot] = s
	r.spans = append(r.spans, s)
}

func (r *run) apply(e *muster.Event) {
	r.Apply(e)
	switch e.Type {
	case muster.EvExecutorLeased:
		r.leased = true
		r.openSpan(e, e.Role)
	case muster.EvExecutorRelease:
		if s := r.open[e.Slot()]; s != nil {
			s.End = e.Time
			if t := r.Tasks[s.Task]; t != nil && s.Role != muster.RoleReviewer {
				s.Outcome = outcome(t.State)
			}
			delete(r.open, e.Slot())
		}
	case muster.EvWorkerAssigned:
		if s := r.open[e.Slot()]; s != nil && s.Task == e.Task {
			s.Worker = e.Worker + "/" + muster.Slot(e.Executor, e.WorkerClone)
		}
	case muster.EvTaskStarted:
		r.openSpan(e, e.Role)
		if s := r.open[e.Slot()]; s != nil && s.Task == e.Task {
			s.Attempt = e.Attempt
		}
	case muster.EvTokensUsed:
		if !e.Counted() {
			break // an agent's claim beside the provider's numbers
		}
		model := e.Model
		if model == "" {
			model = "(unknown)"
		}
		if _, ok := r.byModel[model]; !ok {
			r.byModel[model] = &muster.Usage{}
			r.models = append(r.models, model)
		}
		r.byModel[model].Add(e.Credited())
		r.cost = append(r.cost, costPoint{Time: e.Time, Micros: r.Usage.CostMicros})
	case muster.EvTaskSucceeded, muster.EvTaskFailed, muster.EvTaskSkipped, muster.EvTaskCancelled:
		r.end(e, runview.EndState(e))
	}
}

// end closes the spans of a task's end. Leases are closed by their
// release; when the journal has none, the attempt's span closes here.
func (r *run) end(e *muster.Event, state muster.TaskState) {
	for slot, s := range r.open {
		if s.Task == e.Task && s.Role != muster.RoleReviewer {
			s.Outcome = outcome(state)
			if !r.leased {
				s.End = e.Time
				delete(r.open, slot)
			}
		}
	}
}

// outcome is a coder's span's outcome when its task is in state: a task
// pending again was retried.
func outcome(state muster.TaskState) string {
	if state == muster.StatePending {
		return "retried"
	}
	return string(state)
}

// sortedModels returns the models by cost, highest first.
func (r *run) sortedModels() []string {
	ms := append([]string(nil), r.models...)
	sort.SliceStable(ms, func(i, j int) bool { return r.byModel[ms[i]].CostMicros > r.byModel[ms[j]].CostMicros })
	return ms
}

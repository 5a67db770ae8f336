package htmlreport

import (
	"sort"
	"time"

	"github.com/muster-run/muster"
)

// task is what the report knows of one task.
type task struct {
	ID       muster.TaskID
	Title    string
	After    []muster.TaskID
	State    string
	Slot     string // the coder clone of the latest attempt
	Attempts int
	Rounds   int // fix rounds, across attempts
	Usage    muster.Usage
	Commit   string
	Paths    []string
	Gates    []gateRun
	Fixes    []fixRound
	Reviews  []review
	Reason   string
	Start    time.Time
	End      time.Time
}

type gateRun struct {
	Name   string
	Passed bool
	Time   time.Time
	Output string
}

type fixRound struct {
	Round  int
	Reason string
	Time   time.Time
}

type review struct {
	Slot     string
	Round    int
	Time     time.Time
	Findings []muster.Finding
}

// span is a clone's time on one task: a lease, or an attempt when the
// journal has no leases.
type span struct {
	Slot    string
	Task    muster.TaskID
	Role    string
	Attempt int
	Start   time.Time
	End     time.Time
	Outcome string // a task state, "retried" or "review"
}

// costPoint is the run's cumulative cost after one TokensUsed.
type costPoint struct {
	Time   time.Time
	Micros int64
}

// run is the fold of a journal that the report draws.
type run struct {
	ID, Plan, Branch, Base string
	State                  string
	Start, End             time.Time
	Budget                 int64
	Config                 *muster.Config
	Usage                  muster.Usage

	order    []muster.TaskID
	tasks    map[muster.TaskID]*task
	spans    []*span
	open     map[string]*span // slot -> open span
	slots    []string         // in order of first appearance or config
	bySlot   map[string]*muster.Usage
	byModel  map[string]*muster.Usage
	models   []string
	cost     []costPoint
	Warnings []string
	leased   bool // the journal records leases (else spans are attempts)
}

func fold(events []muster.Event) *run {
	r := &run{tasks: map[muster.TaskID]*task{}, open: map[string]*span{},
		bySlot: map[string]*muster.Usage{}, byModel: map[string]*muster.Usage{}}
	for i := range events {
		r.apply(&events[i])
	}
	end := r.End
	if end.IsZero() {
		end = r.last(events)
	}
	for _, slot := range r.slots {
		if s := r.open[slot]; s != nil {
			s.End = end
			if t := r.tasks[s.Task]; t != nil && s.Role != muster.RoleReviewer {
				s.Outcome = t.State
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

func (r *run) slot(s string) {
	if _, ok := r.bySlot[s]; !ok {
		r.bySlot[s] = &muster.Usage{}
		r.slots = append(r.slots, s)
	}
}

func (r *run) task(id muster.TaskID) *task {
	if t, ok := r.tasks[id]; ok {
		return t
	}
	t := &task{ID: id, State: muster.StatePending}
	r.tasks[id] = t
	r.order = append(r.order, id)
	return t
}

func (r *run) openSpan(e *muster.Event, role string) {
	slot := e.Slot()
	if slot == "" {
		return
	}
	r.slot(slot)
	if s := r.open[slot]; s != nil {
		if s.Task == e.Task {
			return // a lease already covers this attempt
		}
		s.End = e.Time
	}
	if role == "" {
		role = muster.RoleCoder
	}
	s := &span{Slot: slot, Task: e.Task, Role: role, Attempt: e.Attempt, Start: e.Time, Outcome: muster.StateRunning}
	if role == muster.RoleReviewer {
		s.Outcome = "review"
	}
	r.open[slot] = s
	r.spans = append(r.spans, s)
}

func (r *run) apply(e *muster.Event) {
	switch e.Type {
	case muster.EvRunStarted:
		r.ID, r.Plan, r.Branch, r.Base, r.Start, r.Config = e.Run, e.Plan, e.Branch, e.Base, e.Time, e.Config
		if e.Config != nil {
			r.Budget = e.Config.Run.BudgetUSDMicros
			for _, x := range e.Config.Executors {
				for c := 1; c <= x.Clones; c++ {
					r.slot(muster.Slot(x.Name, c))
				}
			}
		}
	case muster.EvRunResumed:
		r.State, r.End = "", time.Time{}
		if e.Config != nil && e.Config.Run.BudgetUSDMicros > 0 {
			r.Budget = e.Config.Run.BudgetUSDMicros
		}
	case muster.EvTasksPlanned:
		for _, pt := range e.Tasks {
			t := r.task(pt.ID)
			t.Title, t.After = pt.Title, pt.After
			if pt.Done {
				t.State = muster.StateSucceeded
			}
		}
	case muster.EvExecutorLeased:
		r.leased = true
		r.openSpan(e, e.Role)
	case muster.EvExecutorRelease:
		if s := r.open[e.Slot()]; s != nil {
			s.End = e.Time
			if t := r.tasks[s.Task]; t != nil && s.Role != muster.RoleReviewer {
				s.Outcome = t.State
				if t.State == muster.StatePending {
					s.Outcome = "retried"
				}
			}
			delete(r.open, e.Slot())
		}
	case muster.EvTaskStarted:
		t := r.task(e.Task)
		t.State, t.Attempts, t.Reason = muster.StateRunning, e.Attempt, ""
		if t.Start.IsZero() {
			t.Start = e.Time
		}
		if e.Slot() != "" {
			t.Slot = e.Slot()
		}
		r.openSpan(e, e.Role)
		if s := r.open[e.Slot()]; s != nil && s.Task == e.Task {
			s.Attempt = e.Attempt
		}
	case muster.EvFixRound:
		t := r.task(e.Task)
		t.Rounds++
		t.Fixes = append(t.Fixes, fixRound{Round: e.Round, Reason: e.Reason, Time: e.Time})
	case muster.EvTokensUsed:
		r.Usage.Add(e.Usage)
		if e.Task != "" {
			r.task(e.Task).Usage.Add(e.Usage)
		}
		if s := e.Slot(); s != "" {
			r.slot(s)
			r.bySlot[s].Add(e.Usage)
		}
		model := e.Model
		if model == "" {
			model = "(unknown)"
		}
		if _, ok := r.byModel[model]; !ok {
			r.byModel[model] = &muster.Usage{}
			r.models = append(r.models, model)
		}
		r.byModel[model].Add(e.Usage)
		r.cost = append(r.cost, costPoint{Time: e.Time, Micros: r.Usage.CostMicros})
	case muster.EvGateRan:
		t := r.task(e.Task)
		t.Gates = append(t.Gates, gateRun{Name: e.Gate, Passed: e.Passed != nil && *e.Passed, Time: e.Time, Output: e.Output})
	case muster.EvReviewed:
		t := r.task(e.Task)
		t.Reviews = append(t.Reviews, review{Slot: e.Slot(), Round: t.Rounds, Time: e.Time, Findings: e.Findings})
	case muster.EvCommitted, muster.EvIntegrated:
		t := r.task(e.Task)
		if e.Commit != "" {
			t.Commit = e.Commit
		}
		if len(e.Paths) > 0 {
			t.Paths = e.Paths
		}
	case muster.EvTaskSucceeded:
		r.end(e, muster.StateSucceeded)
		if e.Commit != "" {
			r.task(e.Task).Commit = e.Commit
		}
	case muster.EvTaskFailed:
		if e.Retry {
			r.end(e, muster.StatePending)
		} else {
			r.end(e, muster.StateFailed)
		}
	case muster.EvTaskSkipped:
		r.end(e, muster.StateSkipped)
	case muster.EvTaskCancelled:
		r.end(e, muster.StateCancelled)
	case muster.EvWarning:
		r.Warnings = append(r.Warnings, e.Message)
	case muster.EvRunFinished:
		r.State, r.End = e.State, e.Time
	case muster.EvRunInterrupted:
		r.State, r.End = muster.RunInterrupted, e.Time
	}
}

// end records a task's end. Leases are closed by their release; when the
// journal has none, the attempt's span closes here.
func (r *run) end(e *muster.Event, state string) {
	t := r.task(e.Task)
	t.State, t.End, t.Reason = state, e.Time, e.Reason
	for slot, s := range r.open {
		if s.Task == e.Task && s.Role != muster.RoleReviewer {
			s.Outcome = state
			if state == muster.StatePending {
				s.Outcome = "retried"
			}
			if !r.leased {
				s.End = e.Time
				delete(r.open, slot)
			}
		}
	}
}

// sortedModels returns the models by cost, highest first.
func (r *run) sortedModels() []string {
	ms := append([]string(nil), r.models...)
	sort.SliceStable(ms, func(i, j int) bool { return r.byModel[ms[i]].CostMicros > r.byModel[ms[j]].CostMicros })
	return ms
}

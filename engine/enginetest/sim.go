// Package enginetest drives engine.State with a virtual clock: actions
// become events at once, and attempts end after their scripted duration.
// Property tests and schedule-quality benchmarks use it.
package enginetest

import (
	"container/heap"
	"fmt"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// Outcome scripts how an attempt ends.
type Outcome struct {
	Duration time.Duration
	Fail     bool
	Retry    bool
	// CostMicros is reported as one TokensUsed event as the attempt ends.
	CostMicros int64
	// RateLimited ends the attempt as a rate limit (a RateLimited event,
	// then a retried, uncharged failure), the agent asking to wait
	// RetryAfter (0: it said nothing).
	RateLimited bool
	RetryAfter  time.Duration
}

// Sim runs a plan against a crew on a virtual clock.
type Sim struct {
	State  *engine.State
	Events []muster.Event
	Now    time.Time
	// Script returns how an attempt of a task ends.
	Script func(id muster.TaskID, attempt int) Outcome
	// OnDecide, if set, sees every decision and the state it was made on.
	OnDecide func(s *engine.State, d engine.Decision)
	// OnApply, if set, runs after each event is applied.
	OnApply func(s *engine.State, e *muster.Event)

	running runHeap
	seq     int64
}

// New starts a run of plan under cfg at time start.
func New(plan *muster.Plan, cfg *muster.Config, start time.Time) (*Sim, error) {
	s := &Sim{State: engine.NewState(), Now: start}
	if err := s.Emit(muster.Event{Type: muster.EvRunStarted, Schema: muster.SchemaVersion, Run: "sim", Config: cfg}); err != nil {
		return nil, err
	}
	if err := s.Emit(muster.Event{Type: muster.EvTasksPlanned, Tasks: plan.Tasks}); err != nil {
		return nil, err
	}
	return s, nil
}

// Emit stamps, records and applies one event.
func (s *Sim) Emit(e muster.Event) error {
	s.seq++
	e.Seq, e.Time = s.seq, s.Now
	s.Events = append(s.Events, e)
	if err := s.State.Apply(&s.Events[len(s.Events)-1]); err != nil {
		return err
	}
	if s.OnApply != nil {
		s.OnApply(s.State, &s.Events[len(s.Events)-1])
	}
	return nil
}

// Run drives the run to its end and returns the makespan.
func (s *Sim) Run() (time.Duration, error) {
	start := s.Now
	for steps := 0; ; steps++ {
		if steps > 10_000_000 {
			return 0, fmt.Errorf("no progress")
		}
		d := engine.Decide(s.State, engine.Input{Now: s.Now})
		if s.OnDecide != nil {
			s.OnDecide(s.State, d)
		}
		finished := false
		for _, a := range d.Actions {
			done, err := s.act(a)
			if err != nil {
				return 0, err
			}
			finished = finished || done
		}
		if finished {
			return s.Now.Sub(start), nil
		}
		if len(d.Actions) > 0 {
			continue
		}
		if s.running.Len() == 0 {
			if !d.WakeAt.IsZero() {
				s.Now = d.WakeAt
				continue
			}
			return 0, fmt.Errorf("stuck: nothing runs and nothing was decided")
		}
		// Advance to the next end; end every attempt due then.
		s.Now = s.running[0].end
		for s.running.Len() > 0 && !s.running[0].end.After(s.Now) {
			if err := s.end(heap.Pop(&s.running).(*run)); err != nil {
				return 0, err
			}
		}
	}
}

// act carries out one decided action; true when it finishes the run.
func (s *Sim) act(a engine.Action) (bool, error) {
	switch a.Kind {
	case engine.ActStart:
		if err := s.Emit(muster.Event{Type: muster.EvExecutorLeased, Task: a.Task, Executor: a.Executor, Clone: a.Clone, Role: a.Role}); err != nil {
			return false, err
		}
		if err := s.Emit(muster.Event{Type: muster.EvTaskStarted, Task: a.Task, Attempt: a.Attempt, Executor: a.Executor, Clone: a.Clone, Role: a.Role}); err != nil {
			return false, err
		}
		o := Outcome{Duration: time.Second}
		if s.Script != nil {
			o = s.Script(a.Task, a.Attempt)
		}
		heap.Push(&s.running, &run{end: s.Now.Add(o.Duration), a: a, o: o})
	case engine.ActSkip:
		return false, s.Emit(muster.Event{Type: muster.EvTaskSkipped, Task: a.Task, Reason: a.Reason})
	case engine.ActCancel:
		return false, s.Emit(muster.Event{Type: muster.EvTaskCancelled, Task: a.Task, Reason: a.Reason, Cause: a.Cause})
	case engine.ActFinish:
		if err := s.Emit(muster.Event{Type: muster.EvRunFinished, State: a.State}); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// end ends one attempt as its script says: its cost, its outcome, the
// clone's release.
func (s *Sim) end(r *run) error {
	var err error
	if r.o.CostMicros > 0 {
		err = s.Emit(muster.Event{Type: muster.EvTokensUsed, Task: r.a.Task, Attempt: r.a.Attempt,
			Usage: muster.Usage{InputTokens: 100, CostMicros: r.o.CostMicros}})
	}
	if err != nil {
		return err
	}
	switch {
	case r.o.RateLimited:
		ev := muster.Event{Type: muster.EvRateLimited, Task: r.a.Task, Attempt: r.a.Attempt, Executor: r.a.Executor, Clone: r.a.Clone}
		if r.o.RetryAfter > 0 {
			until := s.Now.Add(r.o.RetryAfter)
			ev.Until = &until
		}
		if err = s.Emit(ev); err == nil {
			err = s.Emit(muster.Event{Type: muster.EvTaskFailed, Task: r.a.Task, Attempt: r.a.Attempt, Reason: "rate limited (not charged)", Retry: true})
		}
	case r.o.Fail:
		err = s.Emit(muster.Event{Type: muster.EvTaskFailed, Task: r.a.Task, Attempt: r.a.Attempt, Reason: "scripted failure", Retry: r.o.Retry})
	default:
		err = s.Emit(muster.Event{Type: muster.EvTaskSucceeded, Task: r.a.Task, Attempt: r.a.Attempt})
	}
	if err == nil {
		err = s.Emit(muster.Event{Type: muster.EvExecutorRelease, Task: r.a.Task, Executor: r.a.Executor, Clone: r.a.Clone, Role: r.a.Role})
	}
	return err
}

type run struct {
	end time.Time
	a   engine.Action
	o   Outcome
}

type runHeap []*run

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if !h[i].end.Equal(h[j].end) {
		return h[i].end.Before(h[j].end)
	}
	return h[i].a.Task < h[j].a.Task
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Crew returns a config of executors named e1..eN with the given clones.
func Crew(clones ...int) *muster.Config {
	cfg := &muster.Config{}
	for i, n := range clones {
		cfg.Executors = append(cfg.Executors, &muster.ExecutorSpec{Name: fmt.Sprintf("e%d", i+1), Kind: muster.ExecSim, Clones: n})
	}
	return cfg
}

// SetSeq sets the sequence number of the last event, for a Sim built
// around a replayed state.
func (s *Sim) SetSeq(n int64) { s.seq = n }

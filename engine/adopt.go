package engine

import (
	"fmt"

	"github.com/muster-run/muster"
)

// Settled reports whether a task is done for this run as far as an
// adopted plan goes: it succeeded, or a commit of it is on the run branch
// or on its way there (a resume records its success).
func (s *State) Settled(id muster.TaskID) bool {
	t := s.Tasks[id]
	if t == nil {
		return false
	}
	if t.State == muster.StateSucceeded || t.Commit != "" {
		return true
	}
	if m := s.Moving; m != nil {
		for _, l := range m.Chain {
			if l.Task == id {
				return true
			}
		}
	}
	return false
}

// Adoptable reports whether a task may take a new definition from an
// adopted plan (PlanAdopted): it is not settled and not running.
func (s *State) Adoptable(id muster.TaskID) bool {
	t := s.Tasks[id]
	return t != nil && t.State != muster.StateRunning && !s.Settled(id)
}

// applyAdopted folds a PlanAdopted: each task of the adopted version
// that the run has and may adopt (Adoptable) takes its new definition,
// each task the run does not have joins it (pending, scheduled like any
// task), and every other task keeps its own; then the dependency graph,
// the priorities and the ready list are built again. A task the version
// leaves out stays as it was (resume refuses such a version before it
// is journaled).
func (s *State) applyAdopted(e *muster.Event) error {
	seen := map[muster.TaskID]bool{}
	for _, nt := range e.Tasks {
		if nt == nil || seen[nt.ID] {
			continue
		}
		seen[nt.ID] = true
		if old := s.Tasks[nt.ID]; old != nil {
			if !s.Adoptable(nt.ID) || old.Task.Parent != "" {
				continue
			}
			if old.Task.EffectiveKind() == muster.KindCode {
				s.codeTasks--
			}
			old.Task = nt
		} else {
			st := &TaskState{Task: nt, Index: len(s.Order), State: muster.StatePending}
			if nt.Done {
				st.State, st.Reason = muster.StateSucceeded, "marked done in the plan"
			}
			s.Tasks[nt.ID] = st
			s.Order = append(s.Order, nt.ID)
		}
		if nt.EffectiveKind() == muster.KindCode {
			s.codeTasks++
		}
	}
	for _, id := range s.Order {
		for _, d := range s.Tasks[id].Task.After {
			if s.Tasks[d] == nil {
				return fmt.Errorf("event %d: adopted task %q depends on unknown task %q", e.Seq, id, d)
			}
		}
	}
	s.rebuildGraph()
	return nil
}

// rebuildGraph derives every task's dependents and waiting count from
// the tasks' After lists, the doomed set from their states, then the
// priorities and the ready list.
func (s *State) rebuildGraph() {
	for _, id := range s.Order {
		t := s.Tasks[id]
		t.dependents, t.waiting = nil, 0
	}
	s.doomed = map[muster.TaskID]bool{}
	for _, id := range s.Order {
		t := s.Tasks[id]
		for _, d := range t.Task.After {
			dt := s.Tasks[d]
			dt.dependents = append(dt.dependents, id)
			if dt.State != muster.StateSucceeded {
				t.waiting++
			}
			if t.State == muster.StatePending && (dt.State == muster.StateFailed || dt.State == muster.StateSkipped) {
				s.doomed[id] = true
			}
		}
	}
	s.computePriorities()
	s.rebuildReady()
}

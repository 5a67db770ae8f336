package engine

import (
	"fmt"

	"github.com/muster-run/muster"
)

// addTasks adds planned tasks. A splice (parent set) makes each new task
// depend on the parent as well.
func (s *State) addTasks(tasks []*muster.Task, parent muster.TaskID) error {
	fresh := make([]*muster.Task, 0, len(tasks))
	for _, nt := range tasks {
		if old, dup := s.Tasks[nt.ID]; dup {
			if parent != "" && old.Task.Parent == parent {
				// A later attempt of the same delegator planned it again:
				// the first plan stands.
				continue
			}
			return fmt.Errorf("task %q planned twice", nt.ID)
		}
		fresh = append(fresh, nt)
	}
	tasks = fresh
	for _, nt := range tasks {
		task := nt
		if parent != "" && !hasDep(task.After, parent) {
			c := *task
			c.After = append(append([]muster.TaskID(nil), task.After...), parent)
			task = &c
		}
		ts := &TaskState{Task: task, Index: len(s.Order), State: muster.StatePending}
		if task.EffectiveKind() == muster.KindCode {
			s.codeTasks++
		}
		if task.Done {
			ts.State, ts.Reason = muster.StateSucceeded, "marked done in the plan"
		}
		s.Tasks[task.ID] = ts
		s.Order = append(s.Order, task.ID)
	}
	for _, nt := range tasks {
		ts := s.Tasks[nt.ID]
		for _, d := range ts.Task.After {
			dt := s.Tasks[d]
			if dt == nil {
				return fmt.Errorf("task %q depends on unknown task %q", nt.ID, d)
			}
			dt.dependents = append(dt.dependents, nt.ID)
			if dt.State != muster.StateSucceeded {
				ts.waiting++
			}
		}
	}
	s.computePriorities()
	s.rebuildReady()
	return nil
}

func hasDep(deps []muster.TaskID, id muster.TaskID) bool {
	for _, d := range deps {
		if d == id {
			return true
		}
	}
	return false
}

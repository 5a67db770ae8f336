package engine

import (
	"time"

	"github.com/muster-run/muster"
)

// What a State says of the run as a whole: its active time, its counts,
// what runs, whether anything is under way.

// Elapsed is the run's active time so far: from its start to its latest
// event, less the gaps.
func (s *State) Elapsed() time.Duration { return muster.Active(s.Gaps, s.Start, s.LastTime) }

// Active is how much of [from, to] the run was running (not in a gap).
func (s *State) Active(from, to time.Time) time.Duration { return muster.Active(s.Gaps, from, to) }

// Counts returns how many tasks are in each state.
func (s *State) Counts() map[muster.TaskState]int {
	c := map[muster.TaskState]int{}
	for _, t := range s.Tasks {
		c[t.State]++
	}
	return c
}

// Running returns the tasks now running, in plan order.
func (s *State) Running() []*TaskState {
	var out []*TaskState
	for _, id := range s.Order {
		if t := s.Tasks[id]; t.State == muster.StateRunning {
			out = append(out, t)
		}
	}
	return out
}

// Done reports whether every task is terminal.
func (s *State) Done() bool {
	for _, t := range s.Tasks {
		if !t.Terminal() {
			return false
		}
	}
	return true
}

// setUnleased marks a running task as holding no clone, or no more so.
func (s *State) setUnleased(t *TaskState, on bool) {
	if t.unleased == on {
		return
	}
	t.unleased = on
	if on {
		s.unleased++
	} else {
		s.unleased--
	}
}

// Working reports whether anything is under way: a clone leased, or a
// task's commit waiting for integration with its clone given back.
func (s *State) Working() bool { return len(s.Leases) > 0 || s.unleased > 0 }

// holdsCoder reports whether task holds a coder's lease.
func (s *State) holdsCoder(task muster.TaskID) bool {
	for _, l := range s.Leases {
		if l.Task == task && l.Role == muster.RoleCoder {
			return true
		}
	}
	return false
}

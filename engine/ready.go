package engine

import (
	"sort"

	"github.com/muster-run/muster"
)

// The ready set and its order: the longest remaining path first, then
// plan order (ARCHITECTURE §4, "Loop").

// computePriorities sets each task's priority to the longest path of
// weights from it to the end of the graph (itself included).
func (s *State) computePriorities() {
	// Reverse topological order by DFS; the plan is validated acyclic, and
	// a cycle here only stops the recursion.
	const visiting = -1
	seen := make(map[muster.TaskID]int, len(s.Tasks))
	var visit func(id muster.TaskID) float64
	visit = func(id muster.TaskID) float64 {
		t := s.Tasks[id]
		switch seen[id] {
		case visiting:
			return 0
		case 1:
			return t.priority
		}
		seen[id] = visiting
		best := 0.0
		for _, d := range t.dependents {
			if p := visit(d); p > best {
				best = p
			}
		}
		w := 1.0
		if v, ok := s.weights[id]; ok && v > 0 {
			w = v
		}
		t.priority = w + best
		seen[id] = 1
		return t.priority
	}
	for _, id := range s.Order {
		visit(id)
	}
}

func (s *State) less(a, b muster.TaskID) bool {
	ta, tb := s.Tasks[a], s.Tasks[b]
	if ta.priority != tb.priority {
		return ta.priority > tb.priority
	}
	return ta.Index < tb.Index
}

func (s *State) rebuildReady() {
	s.ready = s.ready[:0]
	for _, id := range s.Order {
		t := s.Tasks[id]
		if t.State == muster.StatePending && t.waiting == 0 {
			s.ready = append(s.ready, id)
		}
	}
	s.sortReady()
}

func (s *State) sortReady() {
	sort.SliceStable(s.ready, func(i, j int) bool { return s.less(s.ready[i], s.ready[j]) })
}

func (s *State) insertReady(id muster.TaskID) {
	i := sort.Search(len(s.ready), func(i int) bool { return !s.less(s.ready[i], id) })
	if i < len(s.ready) && s.ready[i] == id {
		return
	}
	s.ready = append(s.ready, "")
	copy(s.ready[i+1:], s.ready[i:])
	s.ready[i] = id
}

func (s *State) removeReady(id muster.TaskID) {
	for i, r := range s.ready {
		if r == id {
			// Starts take from the front: shift the shorter side.
			if i < len(s.ready)/2 {
				copy(s.ready[1:i+1], s.ready[:i])
				s.ready = s.ready[1:]
			} else {
				s.ready = append(s.ready[:i], s.ready[i+1:]...)
			}
			return
		}
	}
}

// Ready returns the tasks ready to start, highest priority first.
func (s *State) Ready() []muster.TaskID { return append([]muster.TaskID(nil), s.ready...) }

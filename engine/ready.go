package engine

import (
	"sort"

	"github.com/muster-run/muster"
)

// The ready set and its order: the longest remaining path first, then
// plan order (ARCHITECTURE §4, "Loop").

// computePriorities sets each task's priority to the longest path of
// weights from it to the end of the graph (itself included). A task
// without a weight weighs the median of the known ones (1 when none is
// known): as likely to be long as to be short.
func (s *State) computePriorities() {
	dflt := s.medianWeight()
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
		w := dflt
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

// medianWeight is the median of the planned tasks' positive weights, 1
// when there are none.
func (s *State) medianWeight() float64 {
	if len(s.weights) == 0 {
		return 1
	}
	vs := make([]float64, 0, len(s.weights))
	for id, v := range s.weights {
		if v > 0 && s.Tasks[id] != nil {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 1
	}
	sort.Float64s(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
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

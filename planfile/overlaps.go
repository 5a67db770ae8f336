package planfile

import (
	"fmt"
	"sort"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/owns"
)

// checkOverlaps reports pairs of tasks, neither of which waits for the
// other (transitively), whose Owns overlap. Tasks without Owns and done
// tasks are left out.
func (ps *problems) checkOverlaps(tasks []*muster.Task, ids map[muster.TaskID]int, norm [][]string, strict bool) {
	n := len(tasks)
	reach := reachability(tasks, ids)
	has := func(i, j int) bool { return reach[i] != nil && reach[i][j/64]&(1<<(j%64)) != 0 }
	live, buckets, firsts := ownsBuckets(tasks, ids, norm)
	stamp := make([]int, n)
	for j := 0; j < n; j++ {
		if !live[j] {
			continue
		}
		var cands []int
		add := func(list []int) {
			for _, i := range list {
				if i < j && stamp[i] != j+1 {
					stamp[i] = j + 1
					cands = append(cands, i)
				}
			}
		}
		wild := false
		for _, s := range firsts[j] {
			if s == "" {
				wild = true
			}
			add(buckets[s])
		}
		if wild {
			for i := 0; i < j; i++ {
				if live[i] {
					add([]int{i})
				}
			}
		} else {
			add(buckets[""])
		}
		sort.Ints(cands)
		for _, i := range cands {
			if has(i, j) || has(j, i) {
				continue
			}
			a, b, ok := owns.Overlaps(norm[i], norm[j])
			if !ok {
				continue
			}
			ps.list = append(ps.list, muster.Problem{
				File: ps.file, Line: ownsLine(tasks[j], b), Warning: !strict,
				Message: fmt.Sprintf("tasks %s (line %d) and %s may run at the same time and their Owns overlap: %q and %q",
					tasks[i].ID, tasks[i].Line, tasks[j].ID, a, b),
			})
		}
	}
}

// reachability returns, for each task i, the bit set of the tasks it
// waits for, transitively (nil for a task on a cycle's unfinished path).
func reachability(tasks []*muster.Task, ids map[muster.TaskID]int) [][]uint64 {
	n := len(tasks)
	words := (n + 63) / 64
	reach := make([][]uint64, n)
	order := make([]int, 0, n)
	state := make([]byte, n)
	// Iterative post-order over dependencies.
	for r := 0; r < n; r++ {
		if state[r] != 0 {
			continue
		}
		type frame struct{ v, e int }
		call := []frame{{r, 0}}
		state[r] = 1
		for len(call) > 0 {
			f := &call[len(call)-1]
			deps := tasks[f.v].After
			if f.e < len(deps) {
				j, ok := ids[deps[f.e]]
				f.e++
				if ok && state[j] == 0 {
					state[j] = 1
					call = append(call, frame{j, 0})
				}
				continue
			}
			state[f.v] = 2
			order = append(order, f.v)
			call = call[:len(call)-1]
		}
	}
	for _, i := range order {
		reach[i] = make([]uint64, words)
		for _, d := range tasks[i].After {
			j, ok := ids[d]
			if !ok || reach[j] == nil {
				continue
			}
			reach[i][j/64] |= 1 << (j % 64)
			for w := range reach[j] {
				reach[i][w] |= reach[j][w]
			}
		}
	}
	return reach
}

// ownsBuckets sorts the live tasks (not done, with Owns) by the first
// segment of their entries. Two entries can overlap only when one's
// static directory prefix contains the other's, so they share a first
// segment unless one starts with a glob: tasks are compared only within
// a bucket and against the "" bucket (globs).
func ownsBuckets(tasks []*muster.Task, ids map[muster.TaskID]int, norm [][]string) (live []bool, buckets map[string][]int, firsts [][]string) {
	n := len(tasks)
	live = make([]bool, n)
	buckets = map[string][]int{}
	firsts = make([][]string, n)
	for i, t := range tasks {
		live[i] = !t.Done && len(norm[i]) > 0 && ids[t.ID] == i
		if !live[i] {
			continue
		}
		for _, e := range norm[i] {
			s := firstSegment(e)
			if l := buckets[s]; len(l) == 0 || l[len(l)-1] != i {
				buckets[s] = append(l, i)
			}
			firsts[i] = append(firsts[i], s)
		}
	}
	return live, buckets, firsts
}

// firstSegment returns the first path segment of a normalised Owns
// entry, or "" when that segment is a glob.
func firstSegment(e string) string {
	s, _, _ := strings.Cut(strings.TrimSuffix(e, "/"), "/")
	if strings.ContainsAny(s, "*?[{") {
		return ""
	}
	return s
}

// ownsLine returns the line of the Owns entry of t that normalises to n
// (the key's first line when none does).
func ownsLine(t *muster.Task, n string) int {
	for k, e := range t.Owns {
		if m, err := owns.Normalize(e); err == nil && m == n {
			return t.ItemLine("owns", k)
		}
	}
	return t.LineOf("owns")
}

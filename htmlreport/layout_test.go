package htmlreport

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// pathPoints samples an edge's path (M, C and L commands, as layoutGraph
// writes them) every step along each segment.
func pathPoints(t *testing.T, d string) [][2]float64 {
	t.Helper()
	var cmds []string
	cur := ""
	for _, r := range d {
		if r == 'M' || r == 'C' || r == 'L' {
			if cur != "" {
				cmds = append(cmds, cur)
			}
			cur = string(r)
			continue
		}
		cur += string(r)
	}
	cmds = append(cmds, cur)
	var pts [][2]float64
	var at [2]float64
	for _, c := range cmds {
		f := strings.Fields(c[1:])
		v := make([]float64, len(f))
		for i, s := range f {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("path %q: %v", d, err)
			}
			v[i] = x
		}
		switch c[0] {
		case 'M':
			at = [2]float64{v[0], v[1]}
		case 'L':
			for s := 0.0; s <= 1; s += 0.005 {
				pts = append(pts, [2]float64{at[0] + (v[0]-at[0])*s, at[1] + (v[1]-at[1])*s})
			}
			at = [2]float64{v[0], v[1]}
		case 'C':
			for s := 0.0; s <= 1; s += 0.005 {
				u := 1 - s
				x := u*u*u*at[0] + 3*u*u*s*v[0] + 3*u*s*s*v[2] + s*s*s*v[4]
				y := u*u*u*at[1] + 3*u*u*s*v[1] + 3*u*s*s*v[3] + s*s*s*v[5]
				pts = append(pts, [2]float64{x, y})
			}
			at = [2]float64{v[4], v[5]}
		}
	}
	return pts
}

// crossings lists the edges of a graph that pass through a box they do
// not connect (a dependency the plan does not have, to the eye).
func crossings(t *testing.T, g graph) []string {
	return near(t, g, 0)
}

// near lists the edges of a graph that come within margin of a box they
// do not connect: on its border (margin 0 misses that), they read as
// leaving or entering it.
func near(t *testing.T, g graph, margin float64) []string {
	var out []string
	for _, e := range g.Edges {
		hit := map[string]bool{}
		for _, p := range pathPoints(t, e.D) {
			for _, n := range g.Nodes {
				if n.ID == e.From || n.ID == e.To || hit[n.ID] {
					continue
				}
				if p[0] > n.X-margin && p[0] < n.X+nodeW+margin && p[1] > n.Y-margin && p[1] < n.Y+nodeH+margin {
					hit[n.ID] = true
					out = append(out, fmt.Sprintf("%s → %s crosses %s", e.From, e.To, n.ID))
				}
			}
		}
	}
	return out
}

// An edge that skips a column goes around the boxes between (issue 13:
// it went straight through the box of a task it has nothing to do with).
func TestGraphEdgesGoAroundBoxes(t *testing.T) {
	for name, tasks := range map[string][]*muster.Task{
		// a → b → c, and a → c skipping b's column on the same row.
		"skip a column": {{ID: "a"}, {ID: "b", After: []muster.TaskID{"a"}}, {ID: "c", After: []muster.TaskID{"a", "b"}}},
		// Wide: the skipping edge runs past several boxes in between.
		"past a crowd": {{ID: "a"}, {ID: "x"}, {ID: "b", After: []muster.TaskID{"a"}}, {ID: "y", After: []muster.TaskID{"x"}},
			{ID: "z", After: []muster.TaskID{"x"}}, {ID: "c", After: []muster.TaskID{"b", "y"}}, {ID: "d", After: []muster.TaskID{"a", "c", "z"}},
			{ID: "e", After: []muster.TaskID{"x", "d"}}},
		// Many skips over crowded columns (issue 25: along a border).
		"skips everywhere": skipsEverywhere(),
	} {
		evs := []muster.Event{{Type: muster.EvRunStarted, Run: "g"}, {Type: muster.EvTasksPlanned, Tasks: tasks}}
		g := layoutGraph(fold(evs))
		if c := crossings(t, g); len(c) > 0 {
			t.Errorf("%s: %s", name, strings.Join(c, "; "))
		}
		// Not along a box's border either (issue 25): clear of it.
		if c := near(t, g, 3); len(c) > 0 {
			t.Errorf("%s: along a border: %s", name, strings.Join(c, "; "))
		}
	}
	// The sample run's graph, as the demo draws it.
	if c := near(t, layoutGraph(fold(loadSample(t))), 3); len(c) > 0 {
		t.Errorf("sample: %s", strings.Join(c, "; "))
	}
}

// skipsEverywhere is a plan whose tasks each wait on the last three and
// on a side task, beside chains of their own: edges skip one, two and
// three columns past crowded rows.
func skipsEverywhere() []*muster.Task {
	var ts []*muster.Task
	for i := 0; i < 8; i++ {
		t := &muster.Task{ID: muster.TaskID(fmt.Sprintf("t%d", i))}
		for k := 1; k <= 3 && i-k >= 0; k++ {
			t.After = append(t.After, muster.TaskID(fmt.Sprintf("t%d", i-k)))
		}
		side := &muster.Task{ID: muster.TaskID(fmt.Sprintf("s%d", i))}
		if i > 0 {
			side.After = []muster.TaskID{muster.TaskID(fmt.Sprintf("s%d", i-1))}
			t.After = append(t.After, muster.TaskID(fmt.Sprintf("s%d", i/2)))
		}
		ts = append(ts, side, t)
	}
	return ts
}

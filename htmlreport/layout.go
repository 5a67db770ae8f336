package htmlreport

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/runview"
)

// Geometry of the drawings, in SVG user units. Every drawing has a
// viewBox and scales to the page width.
const (
	nodeW, nodeH   = 150.0, 36.0
	colGap, rowGap = 70.0, 14.0
	graphPad       = 16.0

	ganttLabel = 120.0 // left column with clone names
	ganttPlot  = 860.0 // width of the time axis
	ganttRow   = 30.0
	ganttTop   = 24.0 // room for the axis labels

	barLabel = 150.0
	barPlot  = 260.0
	barRow   = 24.0
)

// node is a task box of the graph.
type node struct {
	X, Y   float64
	ID     string
	Label  string // ID, clipped
	State  muster.TaskState
	Title  string // full title, for the tooltip
	Detail string // second line: state and clone
}

// edge is a dependency arrow, drawn as a path.
type edge struct {
	D    string // path data
	From string
	To   string
}

type graph struct {
	W, H  float64
	Nodes []node
	Edges []edge
}

// layers assigns each task its longest distance from a task with no
// dependencies, so every edge points right. A dependency cycle (which
// validation rejects before a run) is cut where it is found.
func layers(r *run) map[muster.TaskID]int {
	layer := map[muster.TaskID]int{}
	visiting := map[muster.TaskID]bool{}
	var visit func(id muster.TaskID) int
	visit = func(id muster.TaskID) int {
		if l, ok := layer[id]; ok {
			return l
		}
		if visiting[id] {
			return 0
		}
		visiting[id] = true
		l := 0
		if t := r.Tasks[id]; t != nil {
			for _, d := range t.After {
				if _, known := r.Tasks[d]; known {
					l = max(l, visit(d)+1)
				}
			}
		}
		visiting[id] = false
		layer[id] = l
		return l
	}
	for _, id := range r.Order {
		visit(id)
	}
	return layer
}

func layoutGraph(r *run) graph {
	layer := layers(r)
	rowOf, maxLayer := graphRows(r, layer)
	pos := map[muster.TaskID][2]float64{}
	var g graph
	maxRow := 0
	for _, id := range r.Order {
		t := r.Tasks[id]
		l := layer[id]
		row := rowOf[id]
		maxRow = max(maxRow, row)
		x := graphPad + float64(l)*(nodeW+colGap)
		y := graphPad + float64(row)*(nodeH+rowGap)
		pos[id] = [2]float64{x, y}
		detail := string(t.State)
		if t.Slot != "" {
			detail += " · " + t.Where()
		}
		g.Nodes = append(g.Nodes, node{X: x, Y: y, ID: string(id), Label: clipText(string(id), 20),
			State: t.State, Title: t.Title, Detail: clipText(detail, 24)})
	}
	g.Edges = graphEdges(r, layer, rowOf, pos)
	g.W = 2*graphPad + float64(maxLayer+1)*nodeW + float64(maxLayer)*colGap
	g.H = 2*graphPad + float64(maxRow+1)*nodeH + float64(maxRow)*rowGap
	return g
}

// graphRows orders each layer by the mean row of the task's
// dependencies (plan order breaks ties), so chains run straight and
// edges cross less; it returns each task's row and the last layer.
func graphRows(r *run, layer map[muster.TaskID]int) (map[muster.TaskID]int, int) {
	byLayer := map[int][]muster.TaskID{}
	maxLayer := 0
	for _, id := range r.Order {
		byLayer[layer[id]] = append(byLayer[layer[id]], id)
		maxLayer = max(maxLayer, layer[id])
	}
	rowOf := map[muster.TaskID]int{}
	for l := 0; l <= maxLayer; l++ {
		ids := byLayer[l]
		key := map[muster.TaskID]float64{}
		for i, id := range ids {
			sum, n := 0.0, 0
			for _, d := range r.Tasks[id].After {
				if row, ok := rowOf[d]; ok {
					sum += float64(row)
					n++
				}
			}
			key[id] = float64(i) / 1e6 // plan order
			if n > 0 {
				key[id] += sum / float64(n)
			}
		}
		sort.SliceStable(ids, func(i, j int) bool { return key[ids[i]] < key[ids[j]] })
		for i, id := range ids {
			rowOf[id] = i
		}
	}
	return rowOf, maxLayer
}

// graphEdges draws each dependency as a path from its box to the task's.
func graphEdges(r *run, layer, rowOf map[muster.TaskID]int, pos map[muster.TaskID][2]float64) []edge {
	// channelY is the middle of the gap above row k (k = 0: the top
	// margin; k = maxRow+1: below the last row), where no box lies.
	channelY := func(k int) float64 {
		if k == 0 {
			return graphPad / 2
		}
		return graphPad + float64(k)*(nodeH+rowGap) - rowGap/2
	}
	inChannel := map[int]int{}
	var edges []edge
	for _, id := range r.Order {
		to := pos[id]
		for _, d := range r.Tasks[id].After {
			from, ok := pos[d]
			if !ok {
				continue
			}
			x1, y1 := from[0]+nodeW, from[1]+nodeH/2
			x2, y2 := to[0]-6, to[1]+nodeH/2
			var path string
			if layer[id]-layer[d] <= 1 {
				// Next column: the curve stays in the gap between them.
				mid := (x1 + x2) / 2
				path = fmt.Sprintf("M%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1f", x1, y1, mid, y1, mid, y2, x2, y2)
			} else {
				// Across columns: into the gap after the source column,
				// along a channel between rows past the boxes of the
				// columns between, then into the target's gap. Each curve
				// keeps within a column gap (its control points do), and
				// the straight run within a row gap: it touches no box.
				k := (rowOf[d] + rowOf[id] + 1) / 2
				yc := channelY(k) + float64(inChannel[k]%3-1)*3
				inChannel[k]++
				xa, xb := x1+colGap/2, to[0]-colGap/2
				ma, mb := (x1+xa)/2, (xb+x2)/2
				path = fmt.Sprintf("M%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1fL%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1f",
					x1, y1, ma, y1, ma, yc, xa, yc, xb, yc, mb, yc, mb, y2, x2, y2)
			}
			edges = append(edges, edge{From: string(d), To: string(id), D: path})
		}
	}
	return edges
}

// bar is one span in the Gantt chart.
type bar struct {
	X, Y, W, H float64
	Class      string
	Label      string
	Tip        string
	Marks      []mark
}

// mark is a gate run, fix round or review inside a bar.
type mark struct {
	X, Y, W, H float64
	Class      string
	Tip        string
}

type tick struct {
	X     float64
	Label string
}

type rowLabel struct {
	Y     float64
	Label string
}

type gantt struct {
	W, H  float64
	Rows  []rowLabel
	Bars  []bar
	Ticks []tick
	Grid  []float64 // y of row separators
	// Gaps shade the stretches no muster ran the run (a crash or an
	// interrupt, until the resume).
	Gaps []mark
}

func layoutGantt(r *run) gantt {
	g := gantt{W: ganttLabel + ganttPlot + 10}
	total := r.End.Sub(r.Start)
	if total <= 0 {
		total = time.Second
	}
	xAt := func(t time.Time) float64 {
		if t.IsZero() {
			t = r.End
		}
		return ganttLabel + ganttPlot*float64(t.Sub(r.Start))/float64(total)
	}
	rowOf := map[string]int{}
	for i, c := range r.Clones {
		s := c.Slot
		rowOf[s] = i
		y := ganttTop + float64(i)*ganttRow
		g.Rows = append(g.Rows, rowLabel{Y: y + ganttRow/2 + 4, Label: s})
		g.Grid = append(g.Grid, y+ganttRow)
	}
	g.H = ganttTop + float64(len(r.Clones))*ganttRow + 8
	g.Gaps = gapMarks(r.gaps, xAt, g.H)
	for _, s := range r.spans {
		y := ganttTop + float64(rowOf[s.Slot])*ganttRow + 4
		b := spanBar(s, stopAt(s, r.gaps), xAt, y)
		b.Marks = spanMarks(r, s, xAt, y)
		g.Bars = append(g.Bars, b)
	}
	step := tickStep(total)
	for d := time.Duration(0); d <= total; d += step {
		g.Ticks = append(g.Ticks, tick{X: ganttLabel + ganttPlot*float64(d)/float64(total), Label: fmtTick(d)})
	}
	return g
}

// gapMarks shade the stretches no muster ran the run, over every row.
func gapMarks(gaps []muster.Gap, xAt func(time.Time) float64, h float64) []mark {
	var out []mark
	for _, gp := range gaps {
		x1, x2 := xAt(gp.From), xAt(gp.To)
		out = append(out, mark{X: x1, Y: ganttTop, W: math.Max(x2-x1, 2), H: h - ganttTop, Class: "gap",
			Tip: fmt.Sprintf("muster not running from %s to %s (%s, until the resume): left out of the times",
				gp.From.UTC().Format(time.TimeOnly), gp.To.UTC().Format(time.TimeOnly), runview.Duration(gp.To.Sub(gp.From)))})
	}
	return out
}

// stopAt is where a span's bar ends: the start of the first gap that
// begins inside it, when its end was recorded only at the resume (an
// attempt a crash or an interrupt cut short: nothing ran it in the
// gap); else its end.
func stopAt(s *span, gaps []muster.Gap) time.Time {
	for _, gp := range gaps {
		if gp.From.After(s.Start) && gp.From.Before(s.End) && !s.End.Before(gp.To) {
			return gp.From
		}
	}
	return s.End
}

// spanBar is a span's bar from its start to end, with its tooltip.
func spanBar(s *span, end time.Time, xAt func(time.Time) float64, y float64) bar {
	x1, x2 := xAt(s.Start), xAt(end)
	b := bar{X: x1, Y: y, W: math.Max(x2-x1, 2), H: ganttRow - 8, Class: s.Outcome}
	if b.W > 8*float64(len(s.Task))+6 {
		b.Label = string(s.Task)
	}
	where := s.Slot
	if s.Worker != "" {
		where = s.Worker
	}
	stop := ""
	if !end.Equal(s.End) {
		stop = " (until muster stopped)"
	}
	b.Tip = fmt.Sprintf("%s on %s (%s): %s–%s%s, %s", s.Task, where, s.Role,
		s.Start.UTC().Format(time.TimeOnly), end.UTC().Format(time.TimeOnly), stop, s.Outcome)
	return b
}

// spanMarks are a span's gate runs and fix rounds (a coder's) or its
// reviews (a reviewer's).
func spanMarks(r *run, s *span, xAt func(time.Time) float64, y float64) []mark {
	t := r.Tasks[s.Task]
	if t == nil {
		return nil
	}
	in := func(at time.Time) bool { return !at.Before(s.Start) && !at.After(s.End) }
	var marks []mark
	if s.Role == muster.RoleReviewer {
		for _, rv := range t.Reviews {
			if rv.Slot == s.Slot && in(rv.Time) {
				cls := "review-ok"
				if runview.Blocking(rv.Findings) > 0 {
					cls = "review-block"
				}
				marks = append(marks, mark{X: xAt(rv.Time) - 1.5, Y: y + 2, W: 3, H: ganttRow - 12, Class: cls,
					Tip: fmt.Sprintf("review: %d findings", len(rv.Findings))})
			}
		}
		return marks
	}
	for _, gr := range t.Gates {
		if in(gr.Time) {
			cls, res := "gate-fail", "failed"
			if gr.Passed {
				cls, res = "gate-pass", "passed"
			}
			marks = append(marks, mark{X: xAt(gr.Time) - 1.5, Y: y + 2, W: 3, H: ganttRow - 12, Class: cls,
				Tip: fmt.Sprintf("gate %s %s at %s", gr.Name, res, gr.Time.UTC().Format(time.TimeOnly))})
		}
	}
	for _, f := range t.Fixes {
		if in(f.Time) {
			marks = append(marks, mark{X: xAt(f.Time) - 2, Y: y - 2, W: 4, H: ganttRow - 4, Class: "fix",
				Tip: fmt.Sprintf("fix round %d: %s", f.Round, f.Reason)})
		}
	}
	return marks
}

// tickStep picks a round interval giving at most about ten ticks.
func tickStep(total time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour} {
		if total/s <= 10 {
			return s
		}
	}
	return total / 10
}

// hbar is one bar of a horizontal bar chart.
type hbar struct {
	Y, W  float64
	Label string
	Value string
}

type barChart struct {
	W, H float64
	Bars []hbar
}

func layoutBars(labels []string, values []int64, text func(i int) string) barChart {
	c := barChart{W: barLabel + barPlot + 150, H: float64(len(labels))*barRow + 8}
	var top int64 = 1
	for _, v := range values {
		top = max(top, v)
	}
	for i, l := range labels {
		c.Bars = append(c.Bars, hbar{Y: 4 + float64(i)*barRow, W: math.Max(1, barPlot*float64(values[i])/float64(top)),
			Label: clipText(l, 22), Value: text(i)})
	}
	return c
}

// line is the cumulative cost over time.
type line struct {
	W, H     float64
	Points   string // polyline points
	Area     string // closed polygon under the line
	YTicks   []tick // X holds the y coordinate
	XTicks   []tick
	BudgetY  float64 // 0: no budget line drawn
	Budget   string
	Plot     [4]float64 // x, y, w, h of the plot area
	HasData  bool
	FinalUSD string
	Base     float64 // y of the time axis
}

func layoutCost(r *run) line {
	const left, top, w, h = 60.0, 10.0, 900.0, 170.0
	c := line{W: left + w + 20, H: top + h + 30, Plot: [4]float64{left, top, w, h}, Base: top + h}
	total := r.End.Sub(r.Start)
	if total <= 0 {
		total = time.Second
	}
	var peak int64 = 1
	for _, p := range r.cost {
		peak = max(peak, p.Micros)
	}
	scale := float64(peak) * 1.15
	if r.Budget > 0 && r.Budget <= peak*2 {
		scale = math.Max(scale, float64(r.Budget)*1.05)
		c.BudgetY = top + h - h*float64(r.Budget)/scale
		c.Budget = "budget " + muster.FormatUSD(r.Budget)
	}
	x := func(t time.Time) float64 { return left + w*float64(t.Sub(r.Start))/float64(total) }
	y := func(m int64) float64 { return top + h - h*float64(m)/scale }
	pts := fmt.Sprintf("%.1f,%.1f", left, top+h)
	var prev int64
	for _, p := range r.cost {
		pts += fmt.Sprintf(" %.1f,%.1f %.1f,%.1f", x(p.Time), y(prev), x(p.Time), y(p.Micros))
		prev = p.Micros
	}
	pts += fmt.Sprintf(" %.1f,%.1f", left+w, y(prev))
	c.Points = pts
	c.Area = pts + fmt.Sprintf(" %.1f,%.1f", left+w, top+h)
	c.HasData = len(r.cost) > 0
	c.FinalUSD = muster.FormatUSD(prev)
	for i := 0; i <= 4; i++ {
		m := int64(scale * float64(i) / 4)
		c.YTicks = append(c.YTicks, tick{X: y(m), Label: muster.FormatUSD(m)})
	}
	step := tickStep(total)
	for d := time.Duration(0); d <= total; d += step {
		c.XTicks = append(c.XTicks, tick{X: left + w*float64(d)/float64(total), Label: fmtTick(d)})
	}
	return c
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// fmtTick prints an axis label: 0, 30s, 5m, 1h30m.
func fmtTick(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", int(d.Hours()))
	case d%time.Minute == 0 && d > time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return runview.Duration(d)
}

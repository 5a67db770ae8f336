package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/runview"
)

// Options configure the report.
type Options struct {
	// Title heads the page; empty means "muster run <id>".
	Title string
	// Verification is the receipt's verification status as `muster
	// verify` puts it ("verified: journal, receipt and branch agree");
	// empty means the receipt was not checked.
	Verification string
	// Now is when the report was made, printed in its footer.
	Now time.Time
}

// page is what the template draws.
type page struct {
	Title        string
	Run          *run
	Duration     string
	Done, Total  int
	Failed       int
	Skipped      int
	Cost         string
	Budget       string
	Tokens       string
	Verification string
	VerifyClass  string
	Generated    string
	Graph        graph
	Gantt        gantt
	ByClone      barChart
	ByModel      barChart
	Over         line
	Rows         []row
	Legend       []string
	BarX         float64 // where cost bars start
}

// row is one task in the table.
type row struct {
	ID, Title, State, Slot string
	Attempts, Rounds       int
	Commit, CommitShort    string
	Paths                  []string
	Gates                  []gateSummary
	Findings               []finding
	Tokens, Cost           string
	Time                   string // from the first start to the end
	Reason                 string
}

type gateSummary struct {
	Name string
	Runs []gateMark
}

// gateMark is one run of a gate: passed, failed, or failed but not the
// task's to fix (pre-existing).
type gateMark struct {
	Passed, NotCharged bool
}

type finding struct {
	Severity, Title, Where string
	Round                  int
}

// Write renders the run described by events as one self-contained HTML
// page: a summary, the task graph, a Gantt chart of the clones' work,
// cost charts and a table of tasks. It needs no network: styles are
// inline, drawings are inline SVG, and the page carries no script. Every
// string from the journal is escaped.
func Write(w io.Writer, events []muster.Event, opts Options) error {
	r := fold(events)
	p := page{Title: opts.Title, Run: r, Verification: opts.Verification}
	if p.Title == "" {
		p.Title = "muster run " + r.ID
	}
	if !opts.Now.IsZero() {
		p.Generated = opts.Now.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	switch v := strings.ToLower(opts.Verification); {
	case v == "":
		p.Verification, p.VerifyClass = "not checked (run muster verify)", "unknown"
	case strings.HasPrefix(v, "ok") || strings.HasPrefix(v, "verified") || strings.HasPrefix(v, "pass"):
		p.VerifyClass = "good"
	case strings.Contains(v, "mismatch") || strings.Contains(v, "fail") || strings.Contains(v, "not match") || strings.Contains(v, "invalid"):
		p.VerifyClass = "bad"
	default:
		p.VerifyClass = "unknown"
	}
	if !r.Start.IsZero() {
		p.Duration = runview.Duration(muster.Active(r.gaps, r.Start, r.End))
		if len(r.gaps) > 0 {
			p.Duration += " active"
		}
	}
	for _, id := range r.Order {
		switch r.Tasks[id].State {
		case muster.StateSucceeded:
			p.Done++
		case muster.StateFailed:
			p.Failed++
		case muster.StateSkipped, muster.StateCancelled:
			p.Skipped++
		}
	}
	p.Total = len(r.Order)
	p.Cost = muster.FormatUSD(r.Usage.CostMicros)
	if r.Budget > 0 {
		p.Budget = muster.FormatUSD(r.Budget)
	}
	p.Tokens = runview.Tokens(r.Usage.Tokens())
	p.Graph = layoutGraph(r)
	p.Gantt = layoutGantt(r)
	slots := make([]string, len(r.Clones))
	vals := make([]int64, len(r.Clones))
	for i, c := range r.Clones {
		slots[i], vals[i] = c.Slot, c.Total.CostMicros
	}
	p.ByClone = layoutBars(slots, vals, func(i int) string {
		u := r.Clones[i].Total
		return muster.FormatUSD(u.CostMicros) + " · " + runview.Tokens(u.Tokens()) + " tok"
	})
	models := r.sortedModels()
	vals = make([]int64, len(models))
	for i, m := range models {
		vals[i] = r.byModel[m].CostMicros
	}
	p.ByModel = layoutBars(models, vals, func(i int) string {
		u := r.byModel[models[i]]
		return muster.FormatUSD(u.CostMicros) + " · " + runview.Tokens(u.Tokens()) + " tok"
	})
	p.Over = layoutCost(r)
	p.BarX = barLabel
	p.Legend = []string{string(muster.StateSucceeded), string(muster.StateFailed), "retried", string(muster.StateCancelled), string(muster.StateRunning), "review"}
	for _, id := range r.Order {
		p.Rows = append(p.Rows, makeRow(r.Tasks[id], r.gaps))
	}
	var buf bytes.Buffer
	if err := tmpl().Execute(&buf, p); err != nil {
		return fmt.Errorf("html report: %w", err)
	}
	_, err := w.Write(dropControls(buf.Bytes()))
	return err
}

func makeRow(t *runview.Task, gaps []muster.Gap) row {
	rw := row{ID: string(t.ID), Title: t.Title, State: string(t.State), Slot: t.Where(), Attempts: t.Attempt,
		Rounds: t.FixRounds, Commit: t.Commit, Paths: t.Paths, Reason: t.Reason,
		Tokens: runview.Tokens(t.Usage.Tokens()), Cost: muster.FormatUSD(t.Usage.CostMicros)}
	if d := muster.Active(gaps, t.Start, t.End); d > 0 {
		rw.Time = runview.Duration(d)
	}
	rw.CommitShort = t.Commit
	if len(rw.CommitShort) > 10 {
		rw.CommitShort = rw.CommitShort[:10]
	}
	idx := map[string]int{}
	for _, g := range t.Gates {
		i, ok := idx[g.Name]
		if !ok {
			i = len(rw.Gates)
			idx[g.Name] = i
			rw.Gates = append(rw.Gates, gateSummary{Name: g.Name})
		}
		rw.Gates[i].Runs = append(rw.Gates[i].Runs, gateMark{Passed: g.Passed, NotCharged: g.NotCharged})
	}
	for _, rv := range t.Reviews {
		for _, f := range rv.Findings {
			where := f.Path
			if f.Line > 0 {
				where = fmt.Sprintf("%s:%d", f.Path, f.Line)
			}
			rw.Findings = append(rw.Findings, finding{Severity: f.Severity, Title: f.Title, Where: where, Round: rv.Round})
		}
	}
	return rw
}

var funcs = template.FuncMap{
	"f":    func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"add":  func(a, b float64) float64 { return a + b },
	"sub":  func(a, b float64) float64 { return a - b },
	"half": func(v float64) float64 { return v / 2 },
	"usd":  muster.FormatUSD,
}

// tmpl is the page template, parsed on first use: parsing it at start-up
// would cost every muster process, each confined agent's re-exec
// included, some milliseconds.
var tmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(funcs).Parse(pageTemplate))
})

// dropControls removes the control characters (other than tab, newline
// and carriage return) that agent-written text may carry, such as the
// escape sequences of a terminal: HTML has no place for them, and the
// template's escaping lets them through.
func dropControls(b []byte) []byte {
	out := b[:0]
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			continue
		}
		out = append(out, c)
	}
	return out
}

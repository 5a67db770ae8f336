package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
)

// Formats accepted by Write.
const (
	FormatText = "text"
	FormatJSON = "json"
	FormatCSV  = "csv"
)

// Write renders r in format: text (aligned tables), json or csv.
func Write(w io.Writer, r *Report, format string) error {
	switch format {
	case "", FormatText:
		return WriteText(w, r)
	case FormatJSON:
		return WriteJSON(w, r)
	case FormatCSV:
		return WriteCSV(w, r)
	}
	return muster.Errorf(muster.CodeInvalid, "report format %q: want text, json or csv", format)
}

// WriteJSON writes r as one indented JSON object.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// sections lists the breakdowns in display order.
func (r *Report) sections() []struct {
	name, title string
	lines       []Line
} {
	return []struct {
		name, title string
		lines       []Line
	}{
		{"clone", "By executor clone", sanitized(r.ByClone)},
		{"task", "By task", sanitized(r.ByTask)},
		{"role", "By role", sanitized(r.ByRole)},
		{"model", "By model", sanitized(r.ByModel)},
		{"day", "By day", sanitized(r.ByDay)},
		{"hour", "By hour", sanitized(r.ByHour)},
	}
}

func sanitizedAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = textsafe.Sanitize(s)
	}
	return out
}

// sanitized is a copy of lines whose keys (what agents and plans named:
// models, tasks, clones) are stripped of terminal control sequences for a
// table or CSV; JSON escapes them itself. Every section goes through it,
// so a new one needs no list of its own.
func sanitized(lines []Line) []Line {
	out := make([]Line, len(lines))
	for i, l := range lines {
		l.Key = textsafe.Sanitize(l.Key)
		out[i] = l
	}
	return out
}

// WriteCSV writes one record per line of every breakdown, plus totals
// and runs: section,key,input_tokens,output_tokens,cache_write_tokens,
// cache_read_tokens,total_tokens,cost_usd,estimated_usd,estimated,share_percent.
// A key that a spreadsheet would take for a formula starts with '.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"section", "key", "input_tokens", "output_tokens", "cache_write_tokens", "cache_read_tokens",
		"total_tokens", "cost_usd", "estimated_usd", "estimated", "share_percent"})
	rec := func(section, key string, f Figures) {
		cw.Write([]string{section, csvText(key), i64(f.InputTokens), i64(f.OutputTokens), i64(f.CacheWriteTokens), i64(f.CacheReadTokens),
			i64(f.TotalTokens), micros(f.CostMicros), micros(f.EstimatedMicros), strconv.FormatBool(f.Estimated),
			strconv.FormatFloat(f.SharePercent, 'f', 2, 64)})
	}
	rec("total", "total", r.Totals)
	for _, run := range r.Runs {
		rec("run", run.Run, run.Figures)
	}
	for _, s := range r.sections() {
		for _, l := range s.lines {
			rec(s.name, l.Key, l.Figures)
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvText keeps a key (a model or task an agent named) text to a
// spreadsheet that opens the CSV: one starting with =, +, -, @ (after
// any spaces) would be a formula there, so it gets a leading '.
func csvText(key string) string {
	if t := strings.TrimLeft(key, " "); t != "" && strings.ContainsRune("=+-@", rune(t[0])) {
		return "'" + key
	}
	return key
}

// WriteText writes r as aligned tables for people.
func WriteText(w io.Writer, r *Report) error {
	fmt.Fprintf(w, "Cost report (prices dated %s; * = estimated from prices, not reported by the agent)\n\n", r.PricesDate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "Run\tState\tStarted\tElapsed\tTasks ok\tTasks failed\tTokens\tCost\tCost/day\t\n")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t\n", run.Run, run.State, run.Started.In(zone(r)).Format("2006-01-02 15:04"),
			(time.Duration(run.ActiveSeconds * float64(time.Second))).Round(time.Second), run.Succeeded, run.Failed, num(run.TotalTokens),
			money(run.Figures), perDay(run))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nTotal: %s tokens, %s", num(r.Totals.TotalTokens), money(r.Totals))
	if r.SucceededTasks > 0 {
		fmt.Fprintf(w, "; %d tasks succeeded, %s per succeeded task", r.SucceededTasks, usd(r.CostPerSucceededTaskMicros))
	}
	fmt.Fprintln(w)
	if n := len(r.IntegrationWaits); n > 0 {
		fmt.Fprintf(w, "Integration wait: p50 %.1fs, p95 %.1fs over %d task commits\n", r.IntegrationWaitP50, r.IntegrationWaitP95, n)
	}
	if len(r.Unpriced) > 0 {
		fmt.Fprintf(w, "No price for %s (counted as $0)\n", strings.Join(sanitizedAll(r.Unpriced), ", "))
	}
	for _, t := range r.Tampered {
		fmt.Fprintf(w, "Tampered: run %s, task %s (attempt %d) failed: your repository changed while it ran: %s\n",
			textsafe.Sanitize(t.Run), textsafe.Sanitize(string(t.Task)), t.Attempt, textsafe.Sanitize(strings.Join(t.Changes, "; ")))
	}
	for _, l := range r.RateLimited {
		fmt.Fprintf(w, "Rate limits on %s: %d (muster paced the crew; no task was charged for them", textsafe.Sanitize(l.Executor), l.Count)
		if l.HeldBackSeconds > 0 {
			fmt.Fprintf(w, "; longest retry-after %s", time.Duration(l.HeldBackSeconds*float64(time.Second)))
		}
		fmt.Fprintln(w, ")")
	}
	if err := writeNetwork(w, r); err != nil {
		return err
	}
	if err := writeRaces(w, r); err != nil {
		return err
	}
	for _, s := range r.sections() {
		if len(s.lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", s.title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		width := 0
		for _, l := range s.lines {
			width = max(width, len(l.Key))
		}
		fmt.Fprintf(tw, "%s\tInput\tOutput\tCache write\tCache read\tTokens\tShare\tCost\t\n", strings.Repeat(" ", width))
		for _, l := range s.lines {
			fmt.Fprintf(tw, "%-*s\t%s\t%s\t%s\t%s\t%s\t%.1f%%\t%s\t\n", width, l.Key, num(l.InputTokens), num(l.OutputTokens),
				num(l.CacheWriteTokens), num(l.CacheReadTokens), num(l.TotalTokens), l.SharePercent, money(l.Figures))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func zone(r *Report) *time.Location {
	if loc, err := time.LoadLocation(r.TZ); err == nil {
		return loc
	}
	return time.Local
}

func money(f Figures) string {
	s := usd(f.CostMicros)
	if f.Estimated {
		s += "*"
	}
	return s
}

func usd(micros int64) string { return muster.FormatUSD(micros) }

func micros(m int64) string { return strconv.FormatFloat(float64(m)/1e6, 'f', 6, 64) }

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func num(n int64) string { return muster.Group(n) }

// perDay is a run's cost projected over a day, or — for a run of less
// than MinProjection of active time.
func perDay(run Run) string {
	if run.ActiveSeconds < MinProjection.Seconds() {
		return "—"
	}
	return usd(run.CostPerDayMicros)
}

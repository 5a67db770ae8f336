package usagelog

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
)

// Report kinds.
const (
	Daily   = "daily"
	Monthly = "monthly"
	Session = "session"
)

// Filter selects entries by local date. Zero fields do not filter.
type Filter struct {
	// Since and Until are inclusive dates, YYYY-MM-DD.
	Since, Until string
	// TZ is the zone days and months are counted in; nil means local.
	TZ *time.Location
}

// ParseDate accepts YYYY-MM-DD or YYYYMMDD and returns YYYY-MM-DD.
func ParseDate(s string) (string, error) {
	if len(s) == 8 && !strings.Contains(s, "-") {
		s = s[:4] + "-" + s[4:6] + "-" + s[6:]
	}
	if _, err := time.Parse("2006-01-02", s); err != nil {
		return "", fmt.Errorf("date %q: want YYYY-MM-DD or YYYYMMDD", s)
	}
	return s, nil
}

// Totals are token and cost sums. JSON field names are stable.
type Totals struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	// CostMicros is the exact cost in micro-dollars (CostUSD rounds it).
	CostMicros int64 `json:"cost_micros"`
	// Estimated says some of the cost came from the price table.
	Estimated bool `json:"estimated"`

	nanos int64
}

func (t *Totals) add(e *Entry) {
	// Saturated, never wrapped: the counts come from logs agents wrote.
	t.InputTokens = muster.SatAdd(t.InputTokens, e.InputTokens)
	t.OutputTokens = muster.SatAdd(t.OutputTokens, e.OutputTokens)
	t.CacheWriteTokens = muster.SatAdd(t.CacheWriteTokens, e.CacheWriteTokens)
	t.CacheReadTokens = muster.SatAdd(t.CacheReadTokens, e.CacheReadTokens)
	t.TotalTokens = muster.SatAdd(t.TotalTokens, e.Tokens())
	t.nanos = muster.SatAdd(t.nanos, e.CostNanos)
	t.Estimated = t.Estimated || e.Estimated
	t.finish()
}

func (t *Totals) finish() {
	t.CostMicros = (t.nanos + 500) / 1000
	t.CostUSD = float64(t.CostMicros) / 1e6
}

// ModelRow is one model's share of a row.
type ModelRow struct {
	Model string `json:"model"`
	Totals
	// Unpriced says the model has no price (its estimated cost is 0).
	Unpriced bool `json:"unpriced,omitempty"`
}

// Row is one day, month or session.
type Row struct {
	Key string `json:"key"`
	Totals
	// Models lists the models used, most expensive first; with
	// breakdown it holds their figures, else only names.
	Models []ModelRow `json:"-"`
	// ModelNames are the models used, sorted.
	ModelNames []string `json:"-"`
}

// Report is an aggregated usage report over agent logs.
type Report struct {
	Source string `json:"source"`
	Report string `json:"report"`
	Rows   []Row  `json:"rows"`
	Totals Totals `json:"totals"`
	// PricesDate is the date of the prices estimates used.
	PricesDate string `json:"prices_date"`
	// Unpriced lists models without a price.
	Unpriced  []string `json:"unpriced_models,omitempty"`
	Breakdown bool     `json:"-"`
	Stats     Stats    `json:"-"`
}

// Aggregate groups res's entries into rows of kind (Daily, Monthly,
// Session), sorted by key (sessions by last activity).
func Aggregate(res *Result, kind string, f Filter, breakdown bool) (*Report, error) {
	loc := f.TZ
	if loc == nil {
		loc = time.Local
	}
	switch kind {
	case Daily, Monthly, Session:
	default:
		return nil, muster.Errorf(muster.CodeInvalid, "report %q: want daily, monthly or session", kind)
	}
	rep := &Report{Source: res.Source, Report: kind, PricesDate: res.PricesDate, Breakdown: breakdown, Stats: res.Stats}
	groups := map[string]*group{}
	unpriced := map[string]bool{}
	var days dayCache
	for i := range res.Entries {
		e := &res.Entries[i]
		day := days.date(e.Time, loc)
		if (f.Since != "" && day < f.Since) || (f.Until != "" && day > f.Until) {
			continue
		}
		key := groupKey(kind, day, e)
		g := groups[key]
		if g == nil {
			g = &group{row: Row{Key: key}, models: map[string]*ModelRow{}}
			groups[key] = g
		}
		rep.Totals.add(e)
		if g.add(e) {
			unpriced[e.Model] = true
		}
	}
	rep.Rows = sortedRows(groups, kind)
	for m := range unpriced {
		rep.Unpriced = append(rep.Unpriced, m)
	}
	sort.Strings(rep.Unpriced)
	return rep, nil
}

// groupKey is the row an entry of day belongs to in a report of kind.
func groupKey(kind, day string, e *Entry) string {
	switch kind {
	case Monthly:
		return day[:7]
	case Session:
		return e.Session
	}
	return day
}

// group is one row of a report being folded: its totals, per model, and
// its last activity.
type group struct {
	row    Row
	models map[string]*ModelRow
	last   int64
}

// add folds e into the row; true when e's model has no price.
func (g *group) add(e *Entry) bool {
	g.row.add(e)
	g.last = max(g.last, e.Time)
	if e.Model == "" {
		return false
	}
	m := g.models[e.Model]
	if m == nil {
		m = &ModelRow{Model: e.Model}
		g.models[e.Model] = m
	}
	m.add(e)
	if e.Unpriced {
		m.Unpriced = true
	}
	return e.Unpriced
}

// sortedRows are the groups' rows, each with its models by cost, sorted
// by key (sessions by last activity); never nil.
func sortedRows(groups map[string]*group, kind string) []Row {
	rows := []Row{}
	for _, g := range groups {
		for _, m := range g.models {
			g.row.Models = append(g.row.Models, *m)
			g.row.ModelNames = append(g.row.ModelNames, m.Model)
		}
		sort.Slice(g.row.Models, func(i, j int) bool {
			a, b := g.row.Models[i], g.row.Models[j]
			if a.nanos != b.nanos {
				return a.nanos > b.nanos
			}
			return a.Model < b.Model
		})
		sort.Strings(g.row.ModelNames)
		rows = append(rows, g.row)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if la, lb := groups[a.Key].last, groups[b.Key].last; kind == Session && la != lb {
			return la < lb
		}
		return a.Key < b.Key
	})
	return rows
}

// dayCache formats local dates, remembering the last day's bounds.
type dayCache struct {
	loc        *time.Location
	start, end int64 // [start, end) in Unix ms of the cached day
	day        string
}

func (c *dayCache) date(ms int64, loc *time.Location) string {
	if c.loc == loc && ms >= c.start && ms < c.end {
		return c.day
	}
	t := time.UnixMilli(ms).In(loc)
	y, m, d := t.Date()
	s := time.Date(y, m, d, 0, 0, 0, 0, loc)
	c.loc, c.day = loc, s.Format("2006-01-02")
	c.start, c.end = s.UnixMilli(), s.AddDate(0, 0, 1).UnixMilli()
	return c.day
}

type jsonRow struct {
	Key string `json:"key"`
	Totals
	Models any `json:"models"`
}

// WriteJSON writes the report as one JSON object:
// {"source","report","rows":[{"key",...totals,"models"}],"totals",...}.
// Without breakdown, models is a list of names; with it, a list of
// objects with the same numeric fields and "model".
func (r *Report) WriteJSON(w io.Writer) error {
	out := struct {
		Source     string    `json:"source"`
		Report     string    `json:"report"`
		Rows       []jsonRow `json:"rows"`
		Totals     Totals    `json:"totals"`
		PricesDate string    `json:"prices_date"`
		Unpriced   []string  `json:"unpriced_models"`
	}{Source: r.Source, Report: r.Report, Rows: []jsonRow{}, Totals: r.Totals, PricesDate: r.PricesDate, Unpriced: sanitized(r.Unpriced)}
	for _, row := range r.Rows {
		jr := jsonRow{Key: textsafe.Sanitize(row.Key), Totals: row.Totals}
		if r.Breakdown {
			ms := make([]ModelRow, len(row.Models))
			for i, m := range row.Models {
				m.Model = textsafe.Sanitize(m.Model)
				ms[i] = m
			}
			jr.Models = ms
		} else {
			jr.Models = sanitized(row.ModelNames)
		}
		out.Rows = append(out.Rows, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteText writes the report as an aligned table.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	keyName := map[string]string{Daily: "Date", Monthly: "Month", Session: "Session"}[r.Report]
	width := max(len(keyName), len("Total"))
	for _, row := range r.Rows {
		width = max(width, len(shown(row.Key)))
		for _, m := range row.Models {
			width = max(width, len(shown(m.Model))+2)
		}
	}
	pad := func(s string) string { return s + strings.Repeat(" ", width-len(s)) }
	fmt.Fprintf(tw, "%s\tInput\tOutput\tCache write\tCache read\tTotal tokens\tCost (USD)\t\n", pad(keyName))
	line := func(key string, t Totals) {
		mark := ""
		if t.Estimated {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s%s\t\n", pad(key), num(t.InputTokens), num(t.OutputTokens),
			num(t.CacheWriteTokens), num(t.CacheReadTokens), num(t.TotalTokens), usd(t.CostMicros), mark)
	}
	for _, row := range r.Rows {
		line(shown(row.Key), row.Totals)
		if r.Breakdown {
			for _, m := range row.Models {
				line("  "+shown(m.Model), m.Totals)
			}
		}
	}
	line("Total", r.Totals)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "* estimated from prices dated %s", r.PricesDate)
	if len(r.Unpriced) > 0 {
		names := make([]string, len(r.Unpriced))
		for i, m := range r.Unpriced {
			names[i] = shown(m)
		}
		fmt.Fprintf(w, "; no price for %s (counted as $0)", strings.Join(names, ", "))
	}
	_, err := fmt.Fprintln(w)
	return err
}

// The keys and model names of a report come from logs agents wrote (the
// agent homes of muster's runs): shown without control sequences, and in
// the text report cut to maxShown runes.
const maxShown = 100

func shown(s string) string { return textsafe.Clip(textsafe.Sanitize(s), maxShown) }

// sanitized is names without control sequences; never nil.
func sanitized(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = textsafe.Sanitize(n)
	}
	return out
}

// num formats n with thousands separators.
func num(n int64) string { return muster.Group(n) }

// usd formats micro-dollars as dollars with cents.
func usd(micros int64) string { return muster.FormatUSD(micros) }

// Package report builds usage and cost reports of muster runs from their
// journal events: totals; by day, hour, model, role, task and executor
// clone (with each clone's share of all tokens); cost per succeeded task;
// and a projection of cost per day. Renderers write aligned text, JSON
// (stable snake_case names, "schema": 1) and CSV.
package report

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/cost"
)

// Schema is the version of the JSON form; it changes only when a field
// changes meaning or goes away.
const Schema = 1

// Options shape a report.
type Options struct {
	// TZ is the zone of days and hours; nil means local.
	TZ *time.Location
	// Since and Until bound the TokensUsed events counted: Since <= Time
	// < Until. Zero values do not bound.
	Since, Until time.Time
	// Prices estimates the cost of usage the agent did not price; nil
	// means cost.Default().
	Prices *cost.Table
	// Now is the time of the report (for running runs' projections).
	Now time.Time
}

// Figures are token and cost sums.
type Figures struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	CostMicros       int64   `json:"cost_micros"`
	CostUSD          float64 `json:"cost_usd"`
	// EstimatedMicros is the part of CostMicros estimated from the price
	// table rather than reported by the agent.
	EstimatedMicros int64 `json:"estimated_micros"`
	// Estimated says some of the cost is estimated (EstimatedMicros > 0):
	// a cost the agent reported, or an estimate of $0 for a model the
	// price table does not know, is not.
	Estimated bool `json:"estimated"`
	// SharePercent is this line's share of all tokens in the report.
	SharePercent float64 `json:"share_percent"`
	// Events is the number of TokensUsed events summed.
	Events int `json:"events"`
}

func (f *Figures) add(u muster.Usage, estimated int64) {
	// Sums saturate (muster.SatAdd) and take no count below zero: a
	// journal with absurd records never wraps a total nor credits one.
	u = u.Credited()
	if estimated < 0 {
		estimated = 0
	}
	f.InputTokens = muster.SatAdd(f.InputTokens, u.InputTokens)
	f.OutputTokens = muster.SatAdd(f.OutputTokens, u.OutputTokens)
	f.CacheWriteTokens = muster.SatAdd(f.CacheWriteTokens, u.CacheWriteTokens)
	f.CacheReadTokens = muster.SatAdd(f.CacheReadTokens, u.CacheReadTokens)
	f.TotalTokens = muster.SatAdd(f.TotalTokens, u.Tokens())
	f.CostMicros = muster.SatAdd(f.CostMicros, u.CostMicros)
	f.CostUSD = float64(f.CostMicros) / 1e6
	f.EstimatedMicros = muster.SatAdd(f.EstimatedMicros, estimated)
	f.Estimated = f.EstimatedMicros > 0
	f.Events++
}

// Line is one row of a breakdown.
type Line struct {
	Key string `json:"key"`
	Figures
}

// Run describes one run in the report.
type Run struct {
	Run   string `json:"run"`
	State string `json:"state"` // running, succeeded, failed, interrupted
	// Started and Ended bound the run (Ended: its last event, or Now
	// while it runs).
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// ActiveSeconds is Ended - Started less the gaps when no muster ran
	// the run (between a crash or an interrupt and its resume).
	ActiveSeconds float64 `json:"active_seconds"`
	Succeeded     int     `json:"tasks_succeeded"`
	Failed        int     `json:"tasks_failed"`
	Figures
	// CostPerDayMicros (0 below MinProjection of active time) projects the run's cost over a day at its rate so
	// far (cost ÷ active time × 24 h); 0 when no time has elapsed.
	CostPerDayMicros int64   `json:"cost_per_day_micros"`
	CostPerDayUSD    float64 `json:"cost_per_day_usd"`
}

// Report is a usage and cost report over one or more runs.
type Report struct {
	Schema      int       `json:"schema"`
	GeneratedAt time.Time `json:"generated_at"`
	TZ          string    `json:"tz"`
	// PricesDate is the date of the price table estimates come from.
	PricesDate string   `json:"prices_date"`
	Runs       []Run    `json:"runs"`
	Totals     Figures  `json:"totals"`
	ByDay      []Line   `json:"by_day"`
	ByHour     []Line   `json:"by_hour"`
	ByModel    []Line   `json:"by_model"`
	ByRole     []Line   `json:"by_role"`
	ByTask     []Line   `json:"by_task"`
	ByClone    []Line   `json:"by_clone"`
	Unpriced   []string `json:"unpriced_models"`
	// RateLimited counts the rate limits each executor met; muster paced
	// its credential and retried the attempts without charging the tasks.
	RateLimited []RateLimits `json:"rate_limited"`
	// Tampered lists the attempts that failed because the user's
	// repository changed while they ran (Violation events with reason
	// "tampered").
	Tampered []Tampering `json:"tampered,omitempty"`
	// Observed is the provider's usage beside the agents' claims, per
	// clone and task behind muster's model endpoint; Blocked the requests
	// muster refused.
	Observed []Observed `json:"provider_usage,omitempty"`
	Blocked  []Blocked  `json:"blocked,omitempty"`
	// IntegrationWaits is, per task commit, how long it waited in the
	// integration queue (queue.go); the p50 and p95 summarise them.
	IntegrationWaits   []IntegrationWait `json:"integration_waits,omitempty"`
	IntegrationWaitP50 float64           `json:"integration_wait_p50_seconds"`
	IntegrationWaitP95 float64           `json:"integration_wait_p95_seconds"`
	// SucceededTasks counts tasks that succeeded; CostPerSucceededTask
	// divides the total cost by it.
	SucceededTasks             int     `json:"succeeded_tasks"`
	CostPerSucceededTaskMicros int64   `json:"cost_per_succeeded_task_micros"`
	CostPerSucceededTaskUSD    float64 `json:"cost_per_succeeded_task_usd"`
	// Races are the races of raced tasks (Race:), each candidate's
	// executor, cost, gates and verdict, the winner and the total;
	// WinRates each executor's wins over the races it ran in.
	Races    []Race    `json:"races,omitempty"`
	WinRates []WinRate `json:"race_win_rates,omitempty"`
}

// Tampering is one attempt charged with changes to the user's repository.
type Tampering struct {
	Run     string        `json:"run"`
	Task    muster.TaskID `json:"task"`
	Attempt int           `json:"attempt"`
	Changes []string      `json:"changes"` // untrusted paths inside
}

// RateLimits is one executor's rate limits over the runs.
type RateLimits struct {
	Executor string `json:"executor"`
	Count    int    `json:"count"`
	// HeldBack is the longest backoff a rate limit asked for (its
	// retry-after), in seconds; 0 when none named one.
	HeldBackSeconds float64 `json:"held_back_seconds"`
}

// Placeholder keys for events without a value.
const (
	NoneKey = "(none)"
)

// Build folds the events of runs (each a run's journal, in order) into a
// report. A TokensUsed event's own cost is used when it has one (and its
// Estimated flag kept); otherwise the cost is estimated from the price
// table and marked estimated.
func Build(runs [][]muster.Event, opts Options) *Report {
	loc := opts.TZ
	if loc == nil {
		loc = time.Local
	}
	prices := opts.Prices
	if prices == nil {
		prices = cost.Default()
	}
	b := &builder{
		r:    &Report{Schema: Schema, GeneratedAt: opts.Now, TZ: loc.String(), PricesDate: prices.Date()},
		opts: opts, loc: loc, prices: prices,
		groups:   map[string]map[string]*Figures{},
		unpriced: map[string]bool{}, succeeded: map[string]bool{}, limits: map[string]*RateLimits{},
	}
	for _, events := range runs {
		b.run(events)
	}
	b.finish()
	b.r.addIntegrationWaits(runs)
	b.r.addRaces(runs)
	return b.r
}

// builder is Build's fold over the runs.
type builder struct {
	r      *Report
	opts   Options
	loc    *time.Location
	prices *cost.Table
	// groups are the breakdowns by section ("day", "model", ...) and key.
	groups    map[string]map[string]*Figures
	unpriced  map[string]bool // models without a price
	succeeded map[string]bool // run and task of each task that succeeded
	limits    map[string]*RateLimits
}

func (b *builder) bump(section, key string, u muster.Usage, est int64) {
	m := b.groups[section]
	if m == nil {
		m = map[string]*Figures{}
		b.groups[section] = m
	}
	f := m[key]
	if f == nil {
		f = &Figures{}
		m[key] = f
	}
	f.add(u, est)
}

// run folds one run's journal into its row and the report's figures.
func (b *builder) run(events []muster.Event) {
	r, opts := b.r, b.opts
	run := Run{State: muster.RunRunning}
	taskState := map[muster.TaskID]muster.TaskState{}
	for i := range events {
		e := &events[i]
		if run.Started.IsZero() || e.Time.Before(run.Started) {
			run.Started = e.Time
		}
		if e.Time.After(run.Ended) {
			run.Ended = e.Time
		}
		switch e.Type {
		case muster.EvRunStarted:
			run.Run = e.Run
		case muster.EvRunFinished:
			if e.State != "" {
				run.State = e.State
			} else {
				run.State = muster.RunSucceeded
			}
		case muster.EvRunInterrupted:
			run.State = muster.RunInterrupted
		case muster.EvRunResumed:
			run.State = muster.RunRunning
			resumed(taskState)
		case muster.EvTaskSkipped:
			taskState[e.Task] = muster.StateSkipped
		case muster.EvTaskCancelled:
			taskState[e.Task] = muster.StateCancelled
		case muster.EvTaskSucceeded:
			taskState[e.Task] = muster.StateSucceeded
		case muster.EvTaskReopened:
			taskState[e.Task] = muster.StatePending
		case muster.EvTaskFailed:
			if !e.Retry {
				taskState[e.Task] = muster.StateFailed
			}
		case muster.EvViolation:
			if e.Reason == muster.ReasonTampered {
				r.Tampered = append(r.Tampered, Tampering{Run: run.Run, Task: e.Task, Attempt: e.Attempt, Changes: e.Paths})
			}
		case muster.EvRateLimited:
			b.rateLimited(e)
		case muster.EvTokensUsed:
			b.tokens(&run, e)
		}
	}
	r.network(run.Run, events)
	if run.State == muster.RunRunning && !opts.Now.IsZero() && opts.Now.After(run.Ended) {
		run.Ended = opts.Now
	}
	for task, st := range taskState {
		switch st {
		case muster.StateSucceeded:
			run.Succeeded++
			b.succeeded[run.Run+"\x00"+string(task)] = true
		case muster.StateFailed:
			run.Failed++
		}
	}
	el := muster.Active(muster.Gaps(events), run.Started, run.Ended)
	run.ActiveSeconds = el.Seconds()
	// A projection from less than an hour of work says nothing (a $0.02
	// plan session is not $8,326 a day): none, shown as —.
	if el >= MinProjection {
		run.CostPerDayMicros = int64(float64(run.CostMicros) * float64(24*time.Hour) / float64(el))
		run.CostPerDayUSD = float64(run.CostPerDayMicros) / 1e6
	}
	r.Runs = append(r.Runs, run)
}

// resumed folds a RunResumed into the task states: every task that has
// not succeeded is pending again, as the engine has it.
func resumed(taskState map[muster.TaskID]muster.TaskState) {
	for id, st := range taskState {
		if st != muster.StateSucceeded {
			delete(taskState, id)
		}
	}
}

func (b *builder) rateLimited(e *muster.Event) {
	l := b.limits[e.Executor]
	if l == nil {
		l = &RateLimits{Executor: e.Executor}
		b.limits[e.Executor] = l
	}
	l.Count++
	if e.Until != nil && e.Until.After(e.Time) {
		l.HeldBackSeconds = max(l.HeldBackSeconds, e.Until.Sub(e.Time).Round(time.Second).Seconds())
	}
}

// tokens counts a TokensUsed event, priced when the agent gave no cost.
func (b *builder) tokens(run *Run, e *muster.Event) {
	if !e.Counted() {
		return // the agent's claim beside the provider's numbers (network.go)
	}
	if (!b.opts.Since.IsZero() && e.Time.Before(b.opts.Since)) || (!b.opts.Until.IsZero() && !e.Time.Before(b.opts.Until)) {
		return
	}
	u := e.Usage
	var est int64
	if u.CostMicros == 0 && u.Tokens() > 0 {
		c, known := b.prices.Cost(e.Model, u)
		u.CostMicros, u.Estimated, est = c, true, c
		if !known {
			b.unpriced[modelKey(e.Model)] = true
		}
	} else if u.Estimated {
		est = u.CostMicros
	}
	run.add(u, est)
	b.r.Totals.add(u, est)
	t := e.Time.In(b.loc)
	b.bump("day", t.Format("2006-01-02"), u, est)
	b.bump("hour", t.Format("2006-01-02 15:00"), u, est)
	b.bump("model", modelKey(e.Model), u, est)
	b.bump("role", orNone(string(e.Role)), u, est)
	b.bump("task", orNone(string(e.Task)), u, est)
	b.bump("clone", orNone(e.Slot()), u, est)
}

// finish turns the groups into the report's sections and sums.
func (b *builder) finish() {
	r := b.r
	if r.Runs == nil {
		r.Runs = []Run{}
	}
	r.ByDay = lines(b.groups["day"], r.Totals.TotalTokens, byKey)
	r.ByHour = lines(b.groups["hour"], r.Totals.TotalTokens, byKey)
	r.ByModel = lines(b.groups["model"], r.Totals.TotalTokens, byCost)
	r.ByRole = lines(b.groups["role"], r.Totals.TotalTokens, byCost)
	r.ByTask = lines(b.groups["task"], r.Totals.TotalTokens, byCost)
	r.ByClone = lines(b.groups["clone"], r.Totals.TotalTokens, byKey)
	if r.Totals.TotalTokens > 0 {
		r.Totals.SharePercent = 100
	}
	for i := range r.Runs {
		r.Runs[i].SharePercent = share(r.Runs[i].TotalTokens, r.Totals.TotalTokens)
	}
	r.RateLimited = []RateLimits{}
	for _, l := range b.limits {
		r.RateLimited = append(r.RateLimited, *l)
	}
	sort.Slice(r.RateLimited, func(i, j int) bool { return r.RateLimited[i].Executor < r.RateLimited[j].Executor })
	r.Unpriced = []string{}
	for m := range b.unpriced {
		r.Unpriced = append(r.Unpriced, m)
	}
	sort.Strings(r.Unpriced)
	r.SucceededTasks = len(b.succeeded)
	if r.SucceededTasks > 0 {
		r.CostPerSucceededTaskMicros = r.Totals.CostMicros / int64(r.SucceededTasks)
		r.CostPerSucceededTaskUSD = float64(r.CostPerSucceededTaskMicros) / 1e6
	}
}

func modelKey(m string) string {
	if m == "" {
		return "(unknown)"
	}
	return m
}

func orNone(s string) string {
	if s == "" {
		return NoneKey
	}
	return s
}

func share(part, all int64) float64 {
	if all == 0 {
		return 0
	}
	return float64(part) * 100 / float64(all)
}

const (
	byKey = iota
	byCost
)

func lines(m map[string]*Figures, all int64, order int) []Line {
	out := make([]Line, 0, len(m))
	for k, f := range m {
		l := Line{Key: k, Figures: *f}
		l.SharePercent = share(f.TotalTokens, all)
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool {
		if order == byCost && out[i].CostMicros != out[j].CostMicros {
			return out[i].CostMicros > out[j].CostMicros
		}
		return keyLess(out[i].Key, out[j].Key)
	})
	return out
}

// keyLess orders keys as strings, except that "exec#N" slots compare
// their clone numbers as numbers (claude#2 before claude#10).
func keyLess(a, b string) bool {
	ea, na, oka := splitSlot(a)
	eb, nb, okb := splitSlot(b)
	if oka && okb && ea == eb {
		return na < nb
	}
	return a < b
}

func splitSlot(s string) (string, int, bool) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[i+1:])
	return s[:i], n, err == nil
}

// MinProjection is the active time below which a run's cost is not
// projected over a day.
const MinProjection = time.Hour

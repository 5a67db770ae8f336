package report_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"github.com/muster-run/muster/internal/golden"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/report"
)

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func at(minute int) time.Time { return t0.Add(time.Duration(minute) * time.Minute) }

// demoRun is a small finished run: two claude clones and a codex reviewer.
func demoRun() []muster.Event {
	tok := func(minute int, task, exec string, clone int, role, model string, in, out int64, costMicros int64, est bool) muster.Event {
		return muster.Event{Time: at(minute), Type: muster.EvTokensUsed, Task: muster.TaskID(task), Executor: exec, Clone: clone,
			Role: muster.Role(role), Model: model, Usage: muster.Usage{InputTokens: in, OutputTokens: out, CacheReadTokens: in * 10, CostMicros: costMicros, Estimated: est}}
	}
	return []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "r1", Schema: 1},
		{Time: at(1), Type: muster.EvTaskStarted, Task: "a", Executor: "claude", Clone: 1, Role: "coder"},
		{Time: at(1), Type: muster.EvTaskStarted, Task: "b", Executor: "claude", Clone: 2, Role: "coder"},
		tok(10, "a", "claude", 1, "coder", "claude-sonnet-4-5-20250929", 1000, 200, 50_000, false), // reported by the agent
		tok(20, "b", "claude", 2, "coder", "claude-sonnet-4-5-20250929", 3000, 400, 0, false),      // estimated here
		tok(50, "a", "codex", 1, "reviewer", "gpt-5.5", 500, 100, 0, false),
		tok(70, "b", "claude", 2, "coder", "mystery-model", 100, 10, 0, false),
		{Time: at(80), Type: muster.EvTaskSucceeded, Task: "a"},
		{Time: at(85), Type: muster.EvTaskFailed, Task: "b", Retry: true},
		{Time: at(90), Type: muster.EvTaskSucceeded, Task: "b"},
		{Time: at(120), Type: muster.EvRunFinished, State: muster.RunSucceeded},
	}
}

func build() *report.Report {
	return report.Build([][]muster.Event{demoRun()}, report.Options{TZ: time.UTC, Now: at(300)})
}

func TestCloneSharesSumTo100(t *testing.T) {
	t.Parallel()
	r := build()
	if len(r.ByClone) != 3 {
		t.Fatalf("clones = %+v", r.ByClone)
	}
	sum := 0.0
	keys := []string{}
	for _, l := range r.ByClone {
		sum += l.SharePercent
		keys = append(keys, l.Key)
	}
	if math.Abs(sum-100) > 1e-9 {
		t.Errorf("shares sum to %v", sum)
	}
	if keys[0] != "claude#1" || keys[1] != "claude#2" || keys[2] != "codex#1" {
		t.Errorf("clone keys = %v", keys)
	}
	// claude#2: 3000+400+30000 + 100+10+1000 of 51 310 tokens
	if got := r.ByClone[1].SharePercent; math.Abs(got-34510*100.0/51310) > 1e-9 {
		t.Errorf("claude#2 share = %v", got)
	}
}

func TestEstimatedVersusReported(t *testing.T) {
	t.Parallel()
	r := build()
	byTask := map[string]report.Line{}
	for _, l := range r.ByTask {
		byTask[l.Key] = l
	}
	// sonnet 4.5: 3000×$3 + 400×$15 + 30 000×$0.3 per million = $0.024
	b := byTask["b"]
	if b.CostMicros != 24_000 || b.EstimatedMicros != 24_000 || !b.Estimated {
		t.Errorf("task b = %+v", b.Figures)
	}
	a := byTask["a"]
	// 50 000 reported + gpt-5.5 500×$5 + 100×$30 + 5000×$0.5 = 8 000 estimated
	if a.CostMicros != 58_000 || a.EstimatedMicros != 8_000 || !a.Estimated {
		t.Errorf("task a = %+v", a.Figures)
	}
	var clone1 report.Line
	for _, l := range r.ByClone {
		if l.Key == "claude#1" {
			clone1 = l
		}
	}
	if clone1.Estimated || clone1.CostMicros != 50_000 {
		t.Errorf("claude#1 (agent-reported) = %+v", clone1.Figures)
	}
	if len(r.Unpriced) != 1 || r.Unpriced[0] != "mystery-model" {
		t.Errorf("unpriced = %v", r.Unpriced)
	}
	// A model with no price is counted as $0, not starred as estimated
	// (the report says it has no price).
	for _, l := range r.ByModel {
		if l.Key == "mystery-model" && (l.Estimated || l.EstimatedMicros != 0) {
			t.Errorf("mystery-model = %+v", l.Figures)
		}
	}
	if r.SucceededTasks != 2 || r.CostPerSucceededTaskMicros != 41_000 {
		t.Errorf("succeeded %d, per task %d", r.SucceededTasks, r.CostPerSucceededTaskMicros)
	}
	run := r.Runs[0]
	// $0.082 over 2 h → $0.984 a day
	if run.State != muster.RunSucceeded || run.CostPerDayMicros != 984_000 {
		t.Errorf("run = %+v", run)
	}
}

func TestRunningProjectionUsesNow(t *testing.T) {
	t.Parallel()
	ev := demoRun()
	ev = ev[:len(ev)-1] // not finished
	r := report.Build([][]muster.Event{ev}, report.Options{TZ: time.UTC, Now: at(240)})
	if r.Runs[0].State != muster.RunRunning || r.Runs[0].CostPerDayMicros != 492_000 {
		t.Errorf("run = %+v", r.Runs[0])
	}
}

func TestSinceUntilAndTZ(t *testing.T) {
	t.Parallel()
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	r := report.Build([][]muster.Event{demoRun()}, report.Options{TZ: tokyo, Since: at(15), Until: at(60), Now: at(300)})
	if r.Totals.Events != 2 || len(r.ByHour) != 1 || r.ByHour[0].Key != "2026-11-29 18:00" {
		t.Errorf("events %d, hours %+v", r.Totals.Events, r.ByHour)
	}
}

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	r := build()
	for _, f := range []string{"text", "json", "csv"} {
		var buf bytes.Buffer
		if err := report.Write(&buf, r, f); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "testdata/demo."+f, buf.Bytes())
	}
	var m map[string]any
	var buf bytes.Buffer
	report.Write(&buf, r, "json")
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m["schema"] != float64(1) {
		t.Errorf("json schema = %v (%v)", m["schema"], err)
	}
	buf.Reset()
	report.Write(&buf, r, "csv")
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) < 10 {
		t.Errorf("csv: %d records, %v", len(recs), err)
	}
	if err := report.Write(&buf, r, "xml"); muster.ErrorCode(err) != muster.CodeInvalid {
		t.Errorf("xml: %v", err)
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}

func TestCloneOrderNumeric(t *testing.T) {
	t.Parallel()
	var ev []muster.Event
	for _, c := range []int{10, 2, 1} {
		ev = append(ev, muster.Event{Time: at(c), Type: muster.EvTokensUsed, Executor: "claude", Clone: c, Model: "gpt-5", Usage: muster.Usage{InputTokens: 1}})
	}
	r := report.Build([][]muster.Event{ev}, report.Options{TZ: time.UTC})
	if r.ByClone[0].Key != "claude#1" || r.ByClone[1].Key != "claude#2" || r.ByClone[2].Key != "claude#10" {
		t.Errorf("order: %v %v %v", r.ByClone[0].Key, r.ByClone[1].Key, r.ByClone[2].Key)
	}
}

// The time between a crash and its resume is not the run's: active time
// and the cost per day leave it out.
func TestGapBeforeResumeLeftOut(t *testing.T) {
	t.Parallel()
	evs := []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "g"},
		{Time: at(1), Type: muster.EvTokensUsed, Task: "a", Usage: muster.Usage{CostMicros: 60_000}},
		{Time: at(70), Type: muster.EvMessage, Task: "a"}, // then kill -9
		{Time: at(130), Type: muster.EvTaskCancelled, Task: "a"},
		{Time: at(130), Type: muster.EvRunResumed},
		{Time: at(140), Type: muster.EvRunFinished, State: muster.RunSucceeded},
	}
	r := report.Build([][]muster.Event{evs}, report.Options{TZ: time.UTC})
	run := r.Runs[0]
	// 140 minutes from start to end, 60 of them with no muster running.
	if run.ActiveSeconds != 80*60 {
		t.Errorf("active %v s, want 4800", run.ActiveSeconds)
	}
	// $0.06 over 80 active minutes → $1.08 a day.
	if run.CostPerDayMicros != 1_080_000 {
		t.Errorf("cost per day %d, want 1080000", run.CostPerDayMicros)
	}
}

// TestRendererSanitizesEveryKey: what agents named (a model, a task)
// reaches a table or CSV without its escape sequences, whatever section
// holds it; JSON keeps it, escaped.
func TestRendererSanitizesEveryKey(t *testing.T) {
	t.Parallel()
	evs := demoRun()
	evs[3].Model = "evil\x1b]0;pwned\x07-model"
	evs[4].Task = "b\x1b[2J"
	r := report.Build([][]muster.Event{evs}, report.Options{TZ: time.UTC, Now: at(300)})
	for _, f := range []string{"text", "csv"} {
		var buf bytes.Buffer
		if err := report.Write(&buf, r, f); err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsRune(buf.Bytes(), '\x1b') || bytes.ContainsRune(buf.Bytes(), '\x07') {
			t.Errorf("%s holds a control sequence:\n%q", f, buf.String())
		}
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, r, "json"); err != nil || !bytes.Contains(buf.Bytes(), []byte(`evil\u001b]0;pwned\u0007-model`)) {
		t.Errorf("json lost the model's name (%v):\n%s", err, buf.String())
	}
}

// A run of less than an hour of active time projects no cost per day:
// "—" in the text, 0 in JSON (a $0.02 plan session is not $8,326 a day).
func TestNoProjectionUnderAnHour(t *testing.T) {
	t.Parallel()
	evs := []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "p"},
		{Time: at(0), Type: muster.EvTokensUsed, Task: "a", Usage: muster.Usage{CostMicros: 20_000}},
		{Time: at(1), Type: muster.EvRunFinished, State: muster.RunSucceeded},
	}
	r := report.Build([][]muster.Event{evs}, report.Options{TZ: time.UTC})
	if r.Runs[0].CostPerDayMicros != 0 {
		t.Errorf("cost per day %d, want none", r.Runs[0].CostPerDayMicros)
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, r, "text"); err != nil || !strings.Contains(buf.String(), "—") || strings.Contains(buf.String(), "$28.80") {
		t.Errorf("%v\n%s", err, buf.String())
	}
	// Every other rendering of the same report: no projection either
	// (the HTML page shows none at all).
	for _, f := range []string{"json", "csv"} {
		buf.Reset()
		if err := report.Write(&buf, r, f); err != nil || strings.Contains(buf.String(), "28.8") {
			t.Errorf("%s: %v\n%s", f, err, buf.String())
		}
	}
	if f := "json"; !strings.Contains(func() string { buf.Reset(); _ = report.Write(&buf, r, f); return buf.String() }(), `"cost_per_day_usd": 0`) {
		t.Errorf("json: no zero cost_per_day_usd:\n%s", buf.String())
	}
}

// TestCSVKeyIsNeverAFormula: a model an agent named "=HYPERLINK(...)"
// (or starting with +, -, @, a tab or CR) is a formula to a spreadsheet
// that opens the CSV; the key cell is prefixed with ' so it reads as text.
// Muster's own numbers are left as they are.
func TestCSVKeyIsNeverAFormula(t *testing.T) {
	t.Parallel()
	for _, name := range []string{`=HYPERLINK("http://evil","x")`, "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1", "\r=1"} {
		evs := demoRun()
		evs[3].Model = name
		r := report.Build([][]muster.Event{evs}, report.Options{TZ: time.UTC, Now: at(300)})
		var buf bytes.Buffer
		if err := report.Write(&buf, r, "csv"); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, rec := range recs {
			for i, cell := range rec {
				if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
					t.Errorf("model %q: cell %d of %q starts a formula", name, i, rec)
				}
			}
			if rec[0] == "model" && strings.HasPrefix(rec[1], "'") {
				found = true
			}
		}
		if !found {
			t.Errorf("model %q: no model row kept it as text:\n%s", name, buf.String())
		}
	}
}

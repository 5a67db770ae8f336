package htmlreport

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/viewtest"
)

var t0 = viewtest.T0

// loadSample reads testdata/sample.jsonl: 8 tasks on 4 clones, a fix
// round after review, and a task that fails after two fix rounds.
func loadSample(t testing.TB) []muster.Event {
	return viewtest.Load(t, filepath.Join("testdata", "sample.jsonl"))
}

// Small constructors for hand-made journals.
var (
	at      = viewtest.At
	started = viewtest.Started
	ended   = viewtest.Ended
)

func render(t *testing.T, evs []muster.Event, opts Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, evs, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteSample(t *testing.T) {
	html := render(t, loadSample(t), Options{Verification: "verified: journal, receipt and branch agree", Now: t0.Add(time.Hour)})
	for _, want := range []string{
		`<svg id="graph-svg"`, `<svg id="gantt-svg"`, `<svg id="cost-clone-svg"`, `<svg id="cost-model-svg"`, `<svg id="cost-time-svg"`,
		`<tr id="task-e2e">`, "stalemate: fix round 2 changed nothing", "Handler ignores HEAD requests",
		"verified: journal, receipt and branch agree", "claude#1", "codex#1", "gemini#1", "gpt-5-codex",
		`class="mark fix"`, `class="mark gate-fail"`, `class="mark gate-pass"`, `class="bar failed"`, `class="bar review"`,
		"7/8 done", "$20.00", "2026-11-29 11:00:00 UTC",
	} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// 8 task nodes, one edge per dependency (10 in the sample).
	if n := strings.Count(html, `<g class="task-node">`); n != 8 {
		t.Errorf("%d task nodes, want 8", n)
	}
	if n := strings.Count(html, `<path class="edge"`); n != 10 {
		t.Errorf("%d edges, want 10", n)
	}
	// One bar per lease: 8 coder attempts and 8 reviews.
	if n := strings.Count(html, `<g class="span">`); n != 16 {
		t.Errorf("%d Gantt bars, want 16", n)
	}
	for _, banned := range []string{"<script", "http://", "https://", "@import", "url(http"} {
		if strings.Contains(html, banned) {
			t.Errorf("report contains %q: it must load nothing", banned)
		}
	}
}

func TestUntrustedTextIsEscaped(t *testing.T) {
	evil := "<script>alert(\"x\")</script><img src=x onerror=alert(1)>\x1b]0;pwned\x07\x1b[2J\x00"
	evs := []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "r<b>1</b>", Plan: "p.md", Branch: "muster/r1"},
		{Time: at(0), Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: evil}, {ID: "b", Title: "ok", After: []muster.TaskID{"a"}}}},
		started(1, "a", "sim", 1),
		{Time: at(5), Type: muster.EvReviewed, Task: "a", Executor: "sim", Clone: 2, Findings: []muster.Finding{{Severity: "major", Title: evil, Path: evil}}},
		{Time: at(6), Type: muster.EvTokensUsed, Task: "a", Executor: "sim", Clone: 1, Model: evil, Usage: muster.Usage{InputTokens: 10, CostMicros: 5}},
		{Time: at(7), Type: muster.EvWarning, Message: evil},
		{Time: at(8), Type: muster.EvBlocked, Task: "a", Attempt: 1, Executor: "sim", Clone: 1, Host: evil, Port: 4222, Reason: evil},
		ended(9, muster.EvTaskFailed, "a", evil),
		ended(9, muster.EvTaskSkipped, "b", "dependency a failed"),
		{Time: at(10), Type: muster.EvRunFinished, State: muster.RunFailed},
	}
	html := render(t, evs, Options{Title: evil, Verification: evil})
	if strings.Contains(html, "<script") || strings.Contains(html, "<img") || strings.Contains(html, "<b>1</b>") {
		t.Fatalf("untrusted markup reached the page:\n%s", html)
	}
	if i := strings.IndexFunc(html, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f }); i >= 0 {
		t.Errorf("a control character reached the page: %q", html[max(0, i-20):min(len(html), i+20)])
	}
	if !strings.Contains(html, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Error("escaped title not found")
	}
	// Attributes carry no unescaped quotes from the journal.
	if regexp.MustCompile(`onerror=alert`).MatchString(strings.ReplaceAll(html, "&lt;img src=x onerror=alert(1)&gt;", "")) {
		t.Error("event handler attribute survived")
	}
}

// A Blocked event is on the page: the host muster refused, and why.
func TestBlockedOnThePage(t *testing.T) {
	evs := []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "r1", Plan: "p.md", Branch: "muster/r1"},
		{Time: at(0), Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: "A"}}},
		started(1, "a", "sim", 1),
		{Time: at(2), Type: muster.EvBlocked, Task: "a", Attempt: 1, Executor: "sim", Clone: 1, Host: "127.0.0.1", Port: 4222, Reason: "loopback"},
		ended(3, muster.EvTaskSucceeded, "a", ""),
		{Time: at(4), Type: muster.EvRunFinished, State: muster.RunSucceeded},
	}
	html := render(t, evs, Options{})
	for _, want := range []string{`id="blocked"`, "127.0.0.1:4222", "loopback", "allow_hosts"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestWriteWithoutLeasesOrEvents(t *testing.T) {
	// A journal without leases: attempts make the Gantt bars.
	evs := []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "r2"},
		{Time: at(0), Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a"}, {ID: "b", After: []muster.TaskID{"a"}}}},
		started(1, "a", "sim", 1),
		ended(30, muster.EvTaskSucceeded, "a", ""),
		started(31, "b", "sim", 1),
	}
	html := render(t, evs, Options{})
	if n := strings.Count(html, `<g class="span">`); n != 2 {
		t.Errorf("%d bars, want 2", n)
	}
	if !strings.Contains(html, `class="bar running"`) || !strings.Contains(html, "not checked") {
		t.Error("an unfinished run should show a running bar and an unchecked receipt")
	}
	// No events at all still makes a page.
	if html := render(t, nil, Options{}); !strings.Contains(html, "<h1>muster run </h1>") {
		t.Errorf("empty journal: %.200s", html)
	}
}

func BenchmarkWrite(b *testing.B) { benchWrite(b, loadSample(b)) }

func benchWrite(b *testing.B, evs []muster.Event) {
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := Write(&buf, evs, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/report")
}

func TestRetriedAttemptHasItsOwnBar(t *testing.T) {
	lease := func(s int, typ muster.EventType, clone int) muster.Event {
		return muster.Event{Time: at(s), Type: typ, Task: "a", Executor: "sim", Clone: clone, Role: muster.RoleCoder}
	}
	evs := []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "r3", Config: &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "sim", Kind: "sim", Clones: 2}}}},
		{Time: at(0), Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: "A"}}},
		lease(1, muster.EvExecutorLeased, 1), started(1, "a", "sim", 1),
		{Time: at(20), Type: muster.EvTaskFailed, Task: "a", Attempt: 1, Reason: "exit 1", Retry: true},
		lease(20, muster.EvExecutorRelease, 1),
		lease(21, muster.EvExecutorLeased, 2), {Time: at(21), Type: muster.EvTaskStarted, Task: "a", Attempt: 2, Executor: "sim", Clone: 2},
		{Time: at(50), Type: muster.EvTaskSucceeded, Task: "a", Attempt: 2, Commit: "abc"},
		lease(50, muster.EvExecutorRelease, 2),
		{Time: at(51), Type: muster.EvRunFinished, State: muster.RunSucceeded},
	}
	html := render(t, evs, Options{})
	if !strings.Contains(html, `class="bar retried"`) || !strings.Contains(html, `class="bar succeeded"`) {
		t.Errorf("want a retried and a succeeded bar:\n%s", html)
	}
	if !strings.Contains(html, "<td class=\"num\">2</td>") || !strings.Contains(html, "<td class=\"num\">49s</td>") {
		t.Error("the task row should show 2 attempts and 49s")
	}
	if !strings.Contains(html, `muster logs a --run r3</div>`) {
		t.Error("the task row should say how to read its log")
	}
}

// largeRun makes a journal of n tasks in chains of four on ten clones,
// each with a gate run and a review.
func largeRun(n int) []muster.Event {
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "sim", Kind: "sim", Clones: 10}}}
	evs := []muster.Event{{Time: at(0), Type: muster.EvRunStarted, Run: "big", Config: cfg}}
	var tasks []*muster.Task
	for i := range n {
		t := &muster.Task{ID: muster.TaskID(fmt.Sprintf("t%03d", i)), Title: fmt.Sprintf("task %d", i)}
		if i%4 != 0 {
			t.After = []muster.TaskID{tasks[i-1].ID}
		}
		tasks = append(tasks, t)
	}
	evs = append(evs, muster.Event{Time: at(0), Type: muster.EvTasksPlanned, Tasks: tasks})
	pass := true
	for i, t := range tasks {
		s, clone := (i/40)*60+(i%4)*15, (i/4)%10+1
		evs = append(evs,
			muster.Event{Time: at(s), Type: muster.EvExecutorLeased, Task: t.ID, Executor: "sim", Clone: clone},
			muster.Event{Time: at(s), Type: muster.EvTaskStarted, Task: t.ID, Attempt: 1, Executor: "sim", Clone: clone},
			muster.Event{Time: at(s + 8), Type: muster.EvTokensUsed, Task: t.ID, Executor: "sim", Clone: clone, Model: "m", Usage: muster.Usage{InputTokens: 1000, CostMicros: 2000}},
			muster.Event{Time: at(s + 9), Type: muster.EvGateRan, Task: t.ID, Gate: "test", Passed: &pass},
			muster.Event{Time: at(s + 11), Type: muster.EvReviewed, Task: t.ID, Executor: "sim", Clone: clone},
			muster.Event{Time: at(s + 12), Type: muster.EvTaskSucceeded, Task: t.ID, Attempt: 1, Commit: "c0ffee"},
			muster.Event{Time: at(s + 12), Type: muster.EvExecutorRelease, Task: t.ID, Executor: "sim", Clone: clone},
		)
	}
	return append(evs, muster.Event{Time: at(n/40*60 + 60), Type: muster.EvRunFinished, State: muster.RunSucceeded})
}

func TestWriteLarge(t *testing.T) {
	html := render(t, largeRun(200), Options{})
	if n := strings.Count(html, `<g class="span">`); n != 200 {
		t.Errorf("%d bars, want 200", n)
	}
	if n := strings.Count(html, `<path class="edge"`); n != 150 {
		t.Errorf("%d edges, want 150", n)
	}
}

func BenchmarkWriteLarge(b *testing.B) { benchWrite(b, largeRun(200)) }

// A gate failure that is not the task's (pre-existing) is shown apart
// from the task's own failures.
func TestPreExistingGateFailureIsMarked(t *testing.T) {
	no := false
	evs := []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "r1", Plan: "p.md", Branch: "muster/r1"},
		{Time: at(0), Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: "A"}}},
		started(1, "a", "sim", 1),
		{Time: at(2), Type: muster.EvGateRan, Task: "a", Gate: "pre", Passed: &no, Baseline: "fail", Reason: muster.ReasonPreExisting + ": fails on the base too"},
		{Time: at(3), Type: muster.EvGateRan, Task: "a", Gate: "own", Passed: &no, Baseline: "fail"},
		ended(4, muster.EvTaskFailed, "a", "gate own failed"),
		{Time: at(5), Type: muster.EvRunFinished, State: muster.RunFailed},
	}
	html := render(t, evs, Options{})
	if !strings.Contains(html, `<code>pre</code> <span class="unknown" title="pre-existing`) {
		t.Error("the pre-existing failure is not marked")
	}
	if !strings.Contains(html, `<code>own</code> <span class="fail">✗</span>`) {
		t.Error("the task's own failure (failing on the base too) is not a plain failure")
	}
}

// The time between a crash and the resume is marked on the timeline and
// left out of the run's and the task's times.
// gapRun is a run killed (kill -9) 10 s into task a's first attempt and
// resumed 89 s later: the attempt's cancellation is recorded at the
// resume.
func gapRun() []muster.Event {
	lease := func(s int, typ muster.EventType) muster.Event {
		return muster.Event{Time: at(s), Type: typ, Task: "a", Executor: "sim", Clone: 1, Role: muster.RoleCoder}
	}
	return []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "g", Config: &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "sim", Kind: "sim", Clones: 1}}}},
		{Time: at(0), Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: "A"}}},
		lease(1, muster.EvExecutorLeased), started(1, "a", "sim", 1),
		{Time: at(11), Type: muster.EvMessage, Task: "a"}, // then kill -9
		{Time: at(100), Type: muster.EvTaskCancelled, Task: "a", Attempt: 1, Reason: "interrupted"},
		lease(100, muster.EvExecutorRelease),
		{Time: at(100), Type: muster.EvRunResumed},
		lease(100, muster.EvExecutorLeased), {Time: at(100), Type: muster.EvTaskStarted, Task: "a", Attempt: 2, Executor: "sim", Clone: 1},
		{Time: at(110), Type: muster.EvTaskSucceeded, Task: "a", Attempt: 2, Commit: "abc"},
		lease(110, muster.EvExecutorRelease),
		{Time: at(110), Type: muster.EvRunFinished, State: muster.RunSucceeded},
	}
}

func TestGapBeforeResumeMarked(t *testing.T) {
	evs := gapRun()
	html := render(t, evs, Options{})
	if n := strings.Count(html, `<rect class="gap"`); n != 1 {
		t.Errorf("%d gap marks, want 1", n)
	}
	if !strings.Contains(html, "muster not running from") || !strings.Contains(html, "(1m29s, until the resume)") {
		t.Error("the gap's title should say when muster was not running")
	}
	// 110 s from start to end, 89 of them in the gap.
	if !strings.Contains(html, `<div class="v">21s active</div>`) {
		t.Errorf("wall time should be the active 21s:\n%s", html[strings.Index(html, "Wall time"):][:200])
	}
}

// An attempt the crash cut short is drawn up to the stop, not through
// the "muster not running" band to the resume that recorded its end
// (issue 25); the attempt after the resume starts after the band.
func TestCancelledAttemptStopsAtTheGap(t *testing.T) {
	g := layoutGantt(fold(gapRun()))
	if len(g.Gaps) != 1 || len(g.Bars) != 2 {
		t.Fatalf("%d gaps, %d bars", len(g.Gaps), len(g.Bars))
	}
	gap, first, second := g.Gaps[0], g.Bars[0], g.Bars[1]
	if end := first.X + first.W; end > gap.X+0.01 {
		t.Errorf("the cancelled attempt runs to x=%.1f, into the gap at %.1f–%.1f", end, gap.X, gap.X+gap.W)
	}
	if second.X < gap.X+gap.W-0.01 {
		t.Errorf("the resumed attempt starts at x=%.1f, inside the gap ending at %.1f", second.X, gap.X+gap.W)
	}
	if !strings.Contains(first.Tip, "until muster stopped") {
		t.Errorf("tip %q", first.Tip)
	}
}

// A race on the page: each candidate's slot, gates, change, cost and
// verdict, the winner and why, the race's total; the judge's text escaped.
func TestRaceOnThePage(t *testing.T) {
	yes, no := true, false
	evs := []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "r1", Plan: "p.md", Branch: "muster/r1"},
		{Time: at(0), Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: "A", Race: 2}}},
		{Time: at(1), Type: muster.EvRaceStarted, Task: "a", Attempt: 1, Race: []muster.RaceCandidate{{Executor: "claude", Clone: 1, Attempt: 1}, {Executor: "codex", Clone: 1, Attempt: 2}}},
		started(1, "a", "claude", 1),
		{Time: at(2), Type: muster.EvTokensUsed, Task: "a", Attempt: 2, Executor: "codex", Clone: 1, Usage: muster.Usage{InputTokens: 10, CostMicros: 250_000}},
		{Time: at(2), Type: muster.EvGateRan, Task: "a", Attempt: 1, Gate: "test", Passed: &no},
		{Time: at(2), Type: muster.EvCandidateFinished, Task: "a", Attempt: 1, Executor: "claude", Clone: 1, Passed: &no, Reason: "gate test failed"},
		{Time: at(3), Type: muster.EvCandidateFinished, Task: "a", Attempt: 2, Executor: "codex", Clone: 1, Passed: &yes, Stat: &muster.DiffStat{Added: 4, Deleted: 1, Files: 2}},
		{Time: at(3), Type: muster.EvRaceWon, Task: "a", Attempt: 2, Executor: "codex", Clone: 1, State: muster.RaceOnly, Reason: "the only <b>one</b>"},
		ended(4, muster.EvTaskSucceeded, "a", ""),
		{Time: at(4), Type: muster.EvRunFinished, State: muster.RunSucceeded},
	}
	html := render(t, evs, Options{})
	for _, want := range []string{`id="races"`, "won by <code>codex#1</code> (only)", "the only &lt;b&gt;one&lt;/b&gt;", "total $0.25",
		"<code>claude#1</code>", "gate test failed", "+4 −1 in 2", ">won<", ">out<"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

package runlog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func ptr[T any](v T) *T { return &v }

// events is a run of two tasks: a fails its gate once, is fixed and
// succeeds; b fails and is retried, then fails for good.
func events() []muster.Event {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	evs := []muster.Event{
		{Type: muster.EvRunStarted, Run: "r"},
		{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: "A"}, {ID: "b", Title: "B"}, {ID: "c", Title: "C"}}},
		{Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "x", Clone: 1},
		{Type: muster.EvPhase, Task: "a", Attempt: 1, Phase: "agent"},
		{Type: muster.EvMessage, Task: "a", Attempt: 1, Executor: "x", Clone: 1, Message: "hello"},
		{Type: muster.EvTaskStarted, Task: "b", Attempt: 1, Executor: "x", Clone: 2},
		{Type: muster.EvPhase, Task: "a", Attempt: 1, Phase: "gates"},
		{Type: muster.EvGateRan, Task: "a", Attempt: 1, Gate: "test", Passed: ptr(false), Output: "--- FAIL: TestX"},
		{Type: muster.EvFixRound, Task: "a", Attempt: 1, Round: 1, Reason: "gate test failed"},
		{Type: muster.EvPhase, Task: "a", Attempt: 1, Phase: "agent", Round: 1},
		{Type: muster.EvTaskFailed, Task: "b", Attempt: 1, Reason: "agent failed", Retry: true},
		{Type: muster.EvGateRan, Task: "a", Attempt: 1, Gate: "test", Passed: ptr(true), Round: 1},
		{Type: muster.EvReviewed, Task: "a", Attempt: 1, Executor: "rv", Clone: 1, Round: 1, Findings: []muster.Finding{{Severity: "minor", Title: "nit"}}},
		{Type: muster.EvTaskSucceeded, Task: "a", Attempt: 1, Commit: "0123456789abcdef"},
		{Type: muster.EvTaskStarted, Task: "b", Attempt: 2, Executor: "x", Clone: 2},
		{Type: muster.EvTaskFailed, Task: "b", Attempt: 2, Reason: "agent failed again"},
		{Type: muster.EvTaskSkipped, Task: "c", Reason: "dependency b failed"},
	}
	for i := range evs {
		evs[i].Seq = int64(i + 1)
		evs[i].Time = t0.Add(time.Duration(i) * time.Second)
	}
	return evs
}

func kinds(es []Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Task+":"+e.Kind)
	}
	return strings.Join(s, " ")
}

func TestBuildJournalOnly(t *testing.T) {
	got, err := Build(events(), "", Query{})
	if err != nil {
		t.Fatal(err)
	}
	want := "b:started b:result c:result a:started a:message a:gate a:fix a:gate a:review a:result"
	if k := kinds(got); k != want {
		t.Errorf("kinds:\n got %s\nwant %s", k, want)
	}
	if got[1].State != string(muster.StateFailed) || got[1].Attempt != 2 || got[1].Text != "agent failed again" {
		t.Errorf("b's result: %+v", got[1])
	}
	all, _ := Build(events(), "", Query{Task: "b", Attempt: -1})
	if k := kinds(all); k != "b:started b:result b:started b:result" || all[1].State != "retrying" {
		t.Errorf("every attempt of b: %s (%+v)", k, all[1])
	}
	r1, _ := Build(events(), "", Query{Task: "a", Round: ptr(1)})
	if k := kinds(r1); k != "a:fix a:gate a:review a:result" {
		t.Errorf("round 1 of a: %s", k)
	}
	chrono, _ := Build(events(), "", Query{Attempt: -1, Chrono: true})
	for i := 1; i < len(chrono); i++ {
		if chrono[i].Seq < chrono[i-1].Seq {
			t.Fatalf("chrono order broken at %d: %s", i, kinds(chrono))
		}
	}
	if _, err := Build(events(), "", Query{Task: "nope"}); err == nil || !strings.Contains(err.Error(), "its tasks: a, b, c") {
		t.Errorf("unknown task: %v", err)
	}
	if _, err := Build(events(), "", Query{Task: "a", Attempt: 2}); err == nil {
		t.Errorf("attempt 2 of a: no error")
	}
}

// TestBuildMergesAttemptLog places the attempt log's records among the
// journal's events: prompts after their round's agent phase, output and
// diff stat before the gates, gate commands on their GateRan.
func TestBuildMergesAttemptLog(t *testing.T) {
	dir := t.TempDir()
	recs := []muster.LogRecord{
		{Kind: muster.LogPrompt, Round: 0, Role: "coder", Text: "# Task a"},
		{Kind: muster.LogOutput, Round: 0, Role: "coder", Slot: "x#1", Text: "hello\nwarning: on stderr\n"},
		{Kind: muster.LogDiffStat, Round: 0, Text: "a.txt | +1 -0"},
		{Kind: muster.LogGate, Round: 0, Gate: "test", Command: "go test ./...", Exit: ptr(1)},
		{Kind: muster.LogPrompt, Round: 1, Role: "coder", Text: "## Fix round 1"},
		{Kind: muster.LogGate, Round: 1, Gate: "test", Command: "go test ./...", Exit: ptr(0)},
		{Kind: muster.LogOutput, Round: 1, Role: "reviewer", Slot: "rv#1", Text: "reviewer says"},
	}
	if err := os.MkdirAll(filepath.Join(dir, muster.LogDir), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range recs {
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	b.WriteString("{not json\n")
	if err := os.WriteFile(filepath.Join(dir, muster.LogDir, muster.AttemptLogName("a", 1)), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Build(events(), dir, Query{Task: "a"})
	if err != nil {
		t.Fatal(err)
	}
	want := "a:started a:prompt a:message a:output a:diffstat a:gate a:fix a:prompt a:gate a:output a:review a:result"
	if k := kinds(got); k != want {
		t.Fatalf("kinds:\n got %s\nwant %s", k, want)
	}
	if got[3].Text != "warning: on stderr" {
		t.Errorf("output keeps only what the messages do not show: %q", got[3].Text)
	}
	if g := got[5]; g.Command != "go test ./..." || g.Exit == nil || *g.Exit != 1 || *g.Passed {
		t.Errorf("gate of round 0: %+v", g)
	}
	if g := got[8]; g.Exit == nil || *g.Exit != 0 || !*g.Passed {
		t.Errorf("gate of round 1: %+v", g)
	}
	if got[7].Round != 1 || got[7].Text != "## Fix round 1" {
		t.Errorf("fix round prompt: %+v", got[7])
	}
}

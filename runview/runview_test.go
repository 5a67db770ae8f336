package runview

import (
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestFold(t *testing.T) {
	yes, no := true, false
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "sim", Clones: 2}}}
	cfg.Run.BudgetUSDMicros = 5_000_000
	r := Fold([]muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "r1", Config: cfg},
		{Time: at(0), Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: "A"}, {ID: "b", After: []muster.TaskID{"a"}}}},
		{Time: at(1), Type: muster.EvExecutorLeased, Task: "a", Executor: "sim", Clone: 2, Role: muster.RoleCoder},
		{Time: at(1), Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "sim", Clone: 2},
		{Time: at(2), Type: muster.EvTokensUsed, Task: "a", Executor: "sim", Clone: 2, Usage: muster.Usage{InputTokens: 10, CostMicros: 7}},
		{Time: at(3), Type: muster.EvGateRan, Task: "a", Gate: "test", Passed: &no, Baseline: "fail"},
		{Time: at(3), Type: muster.EvGateRan, Task: "a", Gate: "build", Passed: &yes},
		{Time: at(4), Type: muster.EvFixRound, Task: "a", Round: 1, Reason: "test"},
		{Time: at(5), Type: muster.EvGateRan, Task: "a", Gate: "test", Passed: &yes},
		{Time: at(6), Type: muster.EvReviewed, Task: "a", Executor: "sim", Clone: 1, Findings: []muster.Finding{{Severity: "minor"}}},
		{Time: at(7), Type: muster.EvTaskFailed, Task: "a", Attempt: 1, Retry: true, Reason: "flaky"},
	})
	a := r.Tasks["a"]
	if a.State != muster.StatePending || a.Reason != "flaky" || a.FixRounds != 1 || a.Round != 1 || a.Phase != "" {
		t.Fatalf("task a after a retried failure: %+v", a)
	}
	names, passed := a.LatestGates()
	if len(names) != 2 || names[0] != "test" || !passed["test"] || !passed["build"] || a.Gates[0].Baseline != "fail" {
		t.Fatalf("gates %v %v", names, passed)
	}
	if a.Findings() != 1 || a.Reviews[0].Round != 1 || a.Reviews[0].Slot != "sim#1" {
		t.Fatalf("reviews %+v", a.Reviews)
	}
	if len(r.Clones) != 2 || r.Clones[1].Slot != "sim#2" || r.Clones[1].Task != "" || r.Clones[1].Total.CostMicros != 7 || r.Budget != 5_000_000 {
		t.Fatalf("clones %+v %+v, budget %d", r.Clones[0], r.Clones[1], r.Budget)
	}
	r.Apply(&muster.Event{Time: at(8), Type: muster.EvTaskStarted, Task: "a", Attempt: 2, Executor: "sim", Clone: 1})
	if a.State != muster.StateRunning || a.Attempt != 2 || a.Slot != "sim#1" || a.Reason != "" || !a.Start.Equal(at(1)) || r.Clones[0].Task != "a" {
		t.Fatalf("second attempt: %+v", a)
	}
	r.Apply(&muster.Event{Time: at(9), Type: muster.EvTaskSucceeded, Task: "a", Commit: "abc"})
	r.Apply(&muster.Event{Time: at(9), Type: muster.EvTaskSkipped, Task: "b", Reason: "x"})
	r.Apply(&muster.Event{Time: at(10), Type: muster.EvRunFinished, State: muster.RunSucceeded})
	if done, running, failed, total := r.Counts(); done != 1 || running != 0 || failed != 0 || total != 2 {
		t.Fatalf("counts %d %d %d %d", done, running, failed, total)
	}
	if a.Commit != "abc" || r.State != muster.RunSucceeded || !r.End.Equal(at(10)) || r.Clones[0].Task != "" {
		t.Fatalf("end: %+v %+v", a, r)
	}
}

func TestFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 44600 * time.Millisecond: "45s", 187 * time.Second: "3m07s", 62*time.Minute + 10*time.Second: "1h02m",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int64]string{950: "950", 12_345: "12.3k", 1_200_000: "1.20M"} {
		if got := Tokens(n); got != want {
			t.Errorf("Tokens(%d) = %q, want %q", n, got, want)
		}
	}
	fs := []muster.Finding{{Severity: "critical"}, {Severity: "minor"}, {Severity: "major"}}
	if n := Blocking(fs); n != 2 {
		t.Errorf("Blocking = %d, want 2", n)
	}
}

func TestWorkerAssigned(t *testing.T) {
	r := New()
	at := time.Unix(100, 0)
	for _, e := range []muster.Event{
		{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: "A"}}},
		{Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "sh", Clone: 2, Role: muster.RoleCoder, Time: at},
		{Type: muster.EvWorkerAssigned, Task: "a", Attempt: 1, Executor: "sh", Clone: 2, Role: muster.RoleCoder, Worker: "w1", WorkerClone: 1, Time: at},
	} {
		r.Apply(&e)
	}
	if got := r.Tasks["a"].Where(); got != "w1/sh#1" {
		t.Errorf("task where %q, want w1/sh#1", got)
	}
	if got := r.Clone("sh#2").Name(); got != "w1/sh#1" {
		t.Errorf("busy clone name %q, want w1/sh#1", got)
	}
	r.Apply(&muster.Event{Type: muster.EvExecutorRelease, Executor: "sh", Clone: 2})
	if got := r.Clone("sh#2").Name(); got != "sh#2" {
		t.Errorf("idle clone name %q, want its slot", got)
	}
}

// A warning the run's start and each resume repeat is listed once (issue
// 25: the HTML report showed the /tmp warning three times).
func TestWarningsOnce(t *testing.T) {
	r := New()
	for _, m := range []string{"namespaces: unavailable", "key K only to x", "namespaces: unavailable", "namespaces: unavailable"} {
		r.Apply(&muster.Event{Type: muster.EvWarning, Message: m})
	}
	if len(r.Warnings) != 2 || r.Warnings[0] != "namespaces: unavailable" || r.Warnings[1] != "key K only to x" {
		t.Errorf("warnings %q", r.Warnings)
	}
}

// An executor that joins mid-run gets lanes for its clones, and the
// run's config (a copy) has it; a known name changes nothing.
func TestExecutorJoined(t *testing.T) {
	r := New()
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "sh", Clones: 1}}}
	r.Apply(&muster.Event{Type: muster.EvRunStarted, Run: "r", Config: cfg})
	r.Apply(&muster.Event{Type: muster.EvExecutorJoined, Executor: "y", Worker: "w2", Spec: &muster.ExecutorSpec{Name: "y", Clones: 2}})
	r.Apply(&muster.Event{Type: muster.EvExecutorJoined, Executor: "sh", Worker: "w3", Spec: &muster.ExecutorSpec{Name: "sh", Clones: 9}})
	if len(cfg.Executors) != 1 || r.Config.Executor("y") == nil || r.Config.Executor("sh").Clones != 1 {
		t.Fatalf("config %+v", r.Config.Executors)
	}
	var slots []string
	for _, c := range r.Clones {
		slots = append(slots, c.Slot)
	}
	if got := strings.Join(slots, " "); got != "sh#1 y#1 y#2" {
		t.Errorf("lanes %q", got)
	}
}

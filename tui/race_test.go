package tui

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// A race's plain lines: where it raced (its TaskStarted says nothing
// more), each candidate's end, and who won and why.
func TestPlainRace(t *testing.T) {
	yes, no := true, false
	evs := []muster.Event{
		{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "r", Title: "R"}}},
		{Type: muster.EvRaceStarted, Task: "r", Race: []muster.RaceCandidate{{Executor: "claude", Clone: 1, Attempt: 1}, {Executor: "codex", Clone: 1, Attempt: 2}, {Executor: "gemini", Clone: 1, Attempt: 3}}},
		{Type: muster.EvTaskStarted, Task: "r", Executor: "claude", Clone: 1, Attempt: 3},
		{Type: muster.EvCandidateFinished, Task: "r", Executor: "gemini", Clone: 1, Attempt: 3, Passed: &no, Reason: "gate test failed"},
		{Type: muster.EvCandidateFinished, Task: "r", Executor: "claude", Clone: 1, Attempt: 1, Passed: &yes, Stat: &muster.DiffStat{Added: 3, Files: 1}},
		{Type: muster.EvRaceWon, Task: "r", Executor: "claude", Clone: 1, Attempt: 1, State: muster.RaceJudge, Judge: "rev#1", Reason: "clearer\x1b[31m"},
		{Type: muster.EvTaskSucceeded, Task: "r", Attempt: 1, Commit: "abcdef1234567"},
	}
	var b bytes.Buffer
	p := NewPrinter(&b)
	for _, e := range evs {
		if err := p.Print(e); err != nil {
			t.Fatal(err)
		}
	}
	out := b.String()
	for _, want := range []string{
		"▶ r raced on claude#1, codex#1, gemini#1\n",
		"! r candidate gemini#1 out: gate test failed\n",
		"  r candidate claude#1 passed (+3 -0 in 1 files)\n",
		"★ r won by claude#1 (judge rev#1): clearer",
		"✓ r done",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "started on") || strings.Contains(out, "\x1b[31m") {
		t.Errorf("a race's TaskStarted line, or a raw escape:\n%s", out)
	}
}

// A raced task's lanes say so: each candidate's lane names the race and
// which of its candidates it is (issue 27: live lanes show the race).
func TestLanesShowTheRace(t *testing.T) {
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{
		{Name: "claude", Kind: muster.ExecCommand, Clones: 1}, {Name: "codex", Kind: muster.ExecCommand, Clones: 1}}}
	evs := []muster.Event{
		{Type: muster.EvRunStarted, Time: t0, Run: "run", Config: cfg},
		{Type: muster.EvTasksPlanned, Time: t0, Tasks: []*muster.Task{{ID: "r"}}},
		{Type: muster.EvRaceStarted, Time: t0, Task: "r", Race: []muster.RaceCandidate{{Executor: "claude", Clone: 1, Attempt: 1}, {Executor: "codex", Clone: 1, Attempt: 2}}},
	}
	for i, ex := range []string{"claude", "codex"} {
		evs = append(evs, muster.Event{Type: muster.EvExecutorLeased, Time: t0, Task: "r", Executor: ex, Clone: 1, Role: "coder"},
			muster.Event{Type: muster.EvTaskStarted, Time: t0, Task: "r", Attempt: i + 1, Executor: ex, Clone: 1})
	}
	m := feed(New(Options{Now: fixed(3 * time.Second), Width: 140, Height: 30}), evMsgs(evs)...)
	f := frame(m)
	for _, want := range []string{"race 1/2", "race 2/2"} {
		if !strings.Contains(f, want) {
			t.Errorf("no %q in the lanes:\n%s", want, f)
		}
	}
}

package tui

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func TestPlainLinesLoopsAndIntegrationGates(t *testing.T) {
	yes, no := true, false
	cases := map[string]muster.Event{
		"  t check 2 passed":                          {Type: muster.EvLoopAttempt, Task: "t", Round: 2, Passed: &yes},
		"! t check 1 failed":                          {Type: muster.EvLoopAttempt, Task: "t", Round: 1, Passed: &no},
		"  t loop exhausted after 3 checks still red": {Type: muster.EvLoopEnded, Task: "t", State: "exhausted", Round: 3, Reason: "still red"},
		"! t gate test failed on the integrated tree": {Type: muster.EvGateRan, Task: "t", Gate: "test", Passed: &no, Phase: "integration"},
		"! t gate test failed (pre-existing: it fails on the base too; not charged)": {Type: muster.EvGateRan, Task: "t", Gate: "test", Passed: &no, Baseline: "fail", Reason: "pre-existing: fails on the base commit too; not charged"},
		"! t gate accept failed": {Type: muster.EvGateRan, Task: "t", Gate: "accept", Passed: &no, Baseline: "fail"},
		"  batch of 2 lands on the run branch: a, b": {Type: muster.EvIntegrating, Task: "a", Commit: "m",
			Chain: []muster.ChainLink{{Task: "a", Commit: "c"}, {Task: "b", Commit: "m"}}},
	}
	for want, e := range cases {
		var b bytes.Buffer
		if err := NewPrinter(&b).Print(e); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimPrefix(b.String(), "   0.0s "); got != want+"\n" {
			t.Errorf("%s: %q, want %q", e.Type, got, want+"\n")
		}
	}
}

// Passing gates and tool uses print only when Verbose.
func TestPlainVerbose(t *testing.T) {
	yes := true
	evs := []muster.Event{{Type: muster.EvGateRan, Task: "t", Gate: "test", Passed: &yes}, {Type: muster.EvToolUse, Task: "t", Tool: "Edit", Args: "a.go"}}
	for _, verbose := range []bool{false, true} {
		var b bytes.Buffer
		p := NewPrinter(&b)
		p.Verbose = verbose
		for _, e := range evs {
			if err := p.Print(e); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Count(b.String(), "\n"); got != map[bool]int{false: 0, true: 2}[verbose] {
			t.Errorf("verbose %v: %d lines:\n%s", verbose, got, b.String())
		}
	}
}

var counter = regexp.MustCompile(`\[(\d+)/(\d+)\]`)

// The counter counts finished tasks (succeeded, failed, skipped): never
// [0/0] before the plan is known, not the cancelled ones, and so it does
// not run backwards when a resume takes the interrupted tasks up again.
// The clock is the time since the run started; "done in" the attempt's.
func TestCounterCountsFinishedTasks(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	seq := int64(0)
	var stopped time.Duration // how long no muster ran the run
	ev := func(e muster.Event) muster.Event {
		seq++
		if e.Type == muster.EvRunResumed {
			stopped = time.Hour
		}
		e.Seq, e.Time = seq, t0.Add(time.Duration(seq)*time.Second+stopped)
		return e
	}
	var out bytes.Buffer
	p := NewPrinter(&out)
	feed := func(evs ...muster.Event) {
		for _, e := range evs {
			if err := p.Print(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A resume replays its journal into the printer silently.
	p.Fold(ev(muster.Event{Type: muster.EvRunStarted, Run: "r"}))
	feed(ev(muster.Event{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d", Done: true}}}),
		ev(muster.Event{Type: muster.EvExecutorLeased, Task: "a", Executor: "x", Clone: 1, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "x", Clone: 1, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskStarted, Task: "b", Attempt: 1, Executor: "x", Clone: 2, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskSucceeded, Task: "a", Attempt: 1, Commit: "0123456789abcdef"}),
		ev(muster.Event{Type: muster.EvTaskCancelled, Task: "b", Attempt: 1, Reason: "interrupted"}),
		ev(muster.Event{Type: muster.EvRunInterrupted}),
		ev(muster.Event{Type: muster.EvRunResumed}),
		ev(muster.Event{Type: muster.EvTaskStarted, Task: "b", Attempt: 2, Executor: "x", Clone: 1, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskSucceeded, Task: "b", Attempt: 2}),
	)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := 0
	for _, l := range lines {
		m := counter.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("no counter: %q", l)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if n < last {
			t.Errorf("the counter ran backwards to %d: %q\n%s", n, l, out.String())
		}
		last = n
		if strings.Contains(l, "cancelled") && n != 2 {
			t.Errorf("a cancelled task counted: %q", l)
		}
	}
	if last != 3 {
		t.Errorf("ends at %d, want 3:\n%s", last, out.String())
	}
	// The clock counts the time a muster ran the run: the hour (and the
	// second) between the interrupt and the resume is not in it (issue 25).
	for _, want := range []string{"   5.0s [2/4] ✓ a done in 2.0s commit 0123456789", "interrupted: resume with muster resume r",
		"   7.0s [2/4] resumed: unfinished tasks run again", "   9.0s [3/4] ✓ b done in 1.0s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}

// Color marks the lines; without it they hold no escape.
func TestPlainColor(t *testing.T) {
	for _, color := range []bool{false, true} {
		var b bytes.Buffer
		p := NewPrinter(&b)
		p.Color = color
		if err := p.Print(muster.Event{Type: muster.EvTaskSucceeded, Task: "a\x1b[2Jx"}); err != nil {
			t.Fatal(err)
		}
		if strings.Count(b.String(), "\x1b") != map[bool]int{false: 0, true: 4}[color] {
			t.Errorf("color %v: %q", color, b.String())
		}
	}
}

// An adopted plan version says what changed, and the tasks it adds count
// toward the total.
func TestPlainPlanAdopted(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out)
	for _, e := range []muster.Event{
		{Type: muster.EvRunStarted, Run: "r"},
		{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a"}, {ID: "b"}}},
		{Type: muster.EvRunResumed},
		{Type: muster.EvPlanAdopted, Plan: "plan-2.md", Message: "a: prompt; c: added\x1b[2J", Tasks: []*muster.Task{{ID: "a", Prompt: "x"}, {ID: "c"}}},
	} {
		if err := p.Print(e); err != nil {
			t.Fatal(err)
		}
	}
	if want := "[0/3] ↺ plan plan-2.md adopted: a: prompt; c: added"; !strings.Contains(out.String(), want) || strings.Contains(out.String(), "\x1b") {
		t.Fatalf("no %q (or an escape) in:\n%s", want, out.String())
	}
}

// A fleet worker's reviewer is named as docs/fleet.md says,
// worker/executor#clone, not by the orchestrator's slot (issue 25); a
// local reviewer of the same slot after the release is the slot again.
func TestPlainFleetReviewerNamesWorker(t *testing.T) {
	var b bytes.Buffer
	p := NewPrinter(&b)
	for _, e := range []muster.Event{
		{Type: muster.EvExecutorLeased, Task: "a", Executor: "remote", Clone: 1, Role: muster.RoleReviewer},
		{Type: muster.EvWorkerAssigned, Task: "a", Executor: "remote", Clone: 1, Role: muster.RoleReviewer, Worker: "w1", WorkerClone: 2},
		{Type: muster.EvReviewed, Task: "a", Executor: "remote", Clone: 1, Role: muster.RoleReviewer},
		{Type: muster.EvExecutorRelease, Task: "a", Executor: "remote", Clone: 1, Role: muster.RoleReviewer},
		{Type: muster.EvReviewed, Task: "b", Executor: "remote", Clone: 1, Role: muster.RoleReviewer},
	} {
		if err := p.Print(e); err != nil {
			t.Fatal(err)
		}
	}
	out := b.String()
	if !strings.Contains(out, "a approved by w1/remote#2") || !strings.Contains(out, "b approved by remote#1") {
		t.Errorf("reviewers:\n%s", out)
	}
}

// An executor that joins the crew mid-run gets a line naming it, its
// worker and its clones (the worker's words, sanitized).
func TestPlainExecutorJoined(t *testing.T) {
	var b bytes.Buffer
	p := NewPrinter(&b)
	if err := p.Print(muster.Event{Type: muster.EvExecutorJoined, Executor: "y", Worker: "w\x1b[2J2", Spec: &muster.ExecutorSpec{Name: "y", Clones: 1}}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "executor y joined the crew from fleet worker w") || !strings.Contains(out, "(1 clone)") || strings.Contains(out, "\x1b") {
		t.Errorf("line %q", out)
	}
}

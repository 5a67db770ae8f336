package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// diffPlan against a run where a succeeded and b failed, and a delegated
// d.1 joined: what is adopted, what each line says, and every refusal.
func TestDiffPlan(t *testing.T) {
	st, err := engine.Replay([]muster.Event{
		{Seq: 1, Type: muster.EvRunStarted, Run: "r", Config: &muster.Config{}},
		{Seq: 2, Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a"}, {ID: "b"}, {ID: "d", Delegates: true}}},
		{Seq: 3, Type: muster.EvTasksPlanned, Task: "d", Tasks: []*muster.Task{{ID: "d.1", Parent: "d"}}},
		{Seq: 4, Type: muster.EvTaskSucceeded, Task: "a", Commit: "c0ffee"},
		{Seq: 5, Type: muster.EvTaskFailed, Task: "b", Reason: "gate"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cp := &muster.Plan{Source: "copy.md", Tasks: []*muster.Task{{ID: "a", Line: 3}, {ID: "b", Line: 6}, {ID: "d", Delegates: true, Line: 9}}}
	task := func(id string, line int, edit func(*muster.Task)) *muster.Task {
		nt := &muster.Task{ID: muster.TaskID(id), Line: line}
		if id == "d" {
			nt.Delegates = true
		}
		if edit != nil {
			edit(nt)
		}
		return nt
	}

	// Fine: b's prompt and Owns, a marked [x], a new c after a.
	plan := &muster.Plan{Tasks: []*muster.Task{
		task("a", 3, func(t *muster.Task) { t.Done = true }),
		task("b", 6, func(t *muster.Task) { t.Prompt, t.Owns = "fixed", []string{"b.go"} }),
		task("d", 9, nil),
		task("c", 12, func(t *muster.Task) { t.After = []muster.TaskID{"a"} }),
	}}
	changed, lines, refused := diffPlan(st, cp, plan, "plan.md")
	if len(refused) != 0 {
		t.Fatalf("refused %v", refused)
	}
	if got := []string{string(changed[0].ID), string(changed[1].ID)}; len(changed) != 2 || !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("changed %v", changed)
	}
	if want := []string{"b: Owns, prompt", "c: added"}; !slices.Equal(lines, want) {
		t.Fatalf("lines %q, want %q", lines, want)
	}

	// Refused, all at once: d left out, a's After changed, b marked [x],
	// a new task named as the delegated d.1.
	plan = &muster.Plan{Tasks: []*muster.Task{
		task("a", 3, func(t *muster.Task) { t.After = []muster.TaskID{"n"} }),
		task("b", 6, func(t *muster.Task) { t.Done = true }),
		task("d.1", 9, nil),
		task("n", 12, nil),
	}}
	_, _, refused = diffPlan(st, cp, plan, "plan.md")
	want := []string{
		"copy.md:9: task d is not in plan.md any more",
		"plan.md:3: task a succeeded in this run (commit c0ffee): its After cannot change",
		"plan.md:6: task b has not succeeded in this run: a resume does not take a [x] mark",
		"plan.md:9: task d.1: the run has a task of that ID already (delegated by d)",
	}
	if len(refused) != len(want) {
		t.Fatalf("refused %v", refused)
	}
	for i, w := range want {
		if !strings.HasPrefix(refused[i].String(), w) {
			t.Errorf("refusal %d: %q, want it to start %q", i, refused[i].String(), w)
		}
	}
}

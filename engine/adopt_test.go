package engine_test

import (
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
)

// A resume adopts an edited plan (PlanAdopted): a failed task takes its
// new prompt and dependencies, a new task joins and waits for what it
// names, a succeeded task keeps its definition whatever the version
// says, and replaying the journal gives the same state.
func TestPlanAdoptedReplacesUnfinishedAndAddsNew(t *testing.T) {
	sim, err := enginetest.New(plan("a", "b:a", "c"), enginetest.Crew(2), t0)
	if err != nil {
		t.Fatal(err)
	}
	sim.Script = func(id muster.TaskID, _ int) enginetest.Outcome {
		return enginetest.Outcome{Duration: 1e9, Fail: id != "a"}
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	st := sim.State
	if st.RunState != muster.RunFailed || st.Tasks["a"].State != muster.StateSucceeded {
		t.Fatalf("first pass: run %s, a %s", st.RunState, st.Tasks["a"].State)
	}
	v2 := []*muster.Task{
		{ID: "a", Title: "a edited", Prompt: "ignored: a succeeded"},
		{ID: "b", Title: "b", Prompt: "fixed prompt", After: []muster.TaskID{"a"}, Owns: []string{"b.txt"}},
		{ID: "c", Title: "c", After: []muster.TaskID{"b"}},
		{ID: "d", Title: "d", After: []muster.TaskID{"c"}, Kind: muster.KindCode, Run: "true"},
	}
	for _, e := range []muster.Event{
		{Type: muster.EvRunResumed},
		{Type: muster.EvPlanAdopted, Plan: "plan-2.md", PlanHash: "h2", Tasks: v2},
	} {
		if err := sim.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	if a := st.Tasks["a"].Task; a.Title != "a" || a.Prompt != "" {
		t.Errorf("succeeded task a took the new version: %+v", a)
	}
	if b := st.Tasks["b"].Task; b.Prompt != "fixed prompt" || len(b.Owns) != 1 {
		t.Errorf("b kept its old definition: %+v", b)
	}
	d := st.Tasks["d"]
	if d == nil || d.State != muster.StatePending || d.Index != 3 {
		t.Fatalf("new task d: %+v", d)
	}
	if got := st.Ready(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("ready %v: want b alone (c now waits for b, d for c)", got)
	}
	sim.Script = func(muster.TaskID, int) enginetest.Outcome { return enginetest.Outcome{Duration: 1e9} }
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if st.RunState != muster.RunSucceeded || st.Tasks["d"].State != muster.StateSucceeded {
		t.Fatalf("after adoption: run %s, d %s", st.RunState, st.Tasks["d"].State)
	}
	// Order: b, then c, then d.
	var order []muster.TaskID
	for _, e := range sim.Events {
		if e.Type == muster.EvTaskSucceeded {
			order = append(order, e.Task)
		}
	}
	if want := []muster.TaskID{"a", "b", "c", "d"}; len(order) != 4 || order[1] != want[1] || order[2] != want[2] || order[3] != want[3] {
		t.Fatalf("successes in order %v, want %v", order, want)
	}
	re, err := engine.Replay(sim.Events)
	if err != nil {
		t.Fatal(err)
	}
	for id, et := range st.Tasks {
		rt := re.Tasks[id]
		if rt == nil || rt.State != et.State || rt.Task.Prompt != et.Task.Prompt || rt.Attempts != et.Attempts {
			t.Fatalf("replay of %s: %+v, live %+v", id, rt, et)
		}
	}
}

// A version naming a dependency the run does not have is refused by the
// fold (resume validates the version before it is journaled).
func TestPlanAdoptedUnknownDependency(t *testing.T) {
	st, err := engine.Replay([]muster.Event{
		{Type: muster.EvRunStarted, Run: "r", Config: enginetest.Crew(1)},
		{Type: muster.EvTasksPlanned, Tasks: plan("a").Tasks},
	})
	if err != nil {
		t.Fatal(err)
	}
	bad := &muster.Event{Type: muster.EvPlanAdopted, Tasks: []*muster.Task{{ID: "a", After: []muster.TaskID{"zz"}}}}
	if err := st.Apply(bad); err == nil {
		t.Fatal("a dependency on an unknown task was adopted")
	}
}

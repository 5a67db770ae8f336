package engine_test

import (
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
)

// A pull request's feedback reopens succeeded tasks (muster pr
// --follow): the reopened task is ready again, a reopened dependent
// waits for its reopened dependency, and the run finishes once both
// succeed again.
func TestReopenedTasksRunAgainInOrder(t *testing.T) {
	sim, err := enginetest.New(plan("a", "b:a", "c"), enginetest.Crew(2), t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	st := sim.State
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s", st.RunState)
	}
	for _, e := range []muster.Event{
		{Type: muster.EvRunResumed, Cause: muster.CausePR},
		{Type: muster.EvTaskReopened, Task: "b", Followup: 1, Message: "fix b"},
		{Type: muster.EvTaskReopened, Task: "a", Followup: 1, Message: "fix a"},
	} {
		if err := sim.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := st.Tasks["a"], st.Tasks["b"]; a.State != muster.StatePending || b.State != muster.StatePending || a.Feedback != "fix a" || b.Followup != 1 {
		t.Fatalf("a %s %q, b %s %d", a.State, a.Feedback, b.State, b.Followup)
	}
	d := engine.Decide(st, engine.Input{Now: t0})
	if len(d.Actions) != 1 || d.Actions[0].Task != "a" {
		t.Fatalf("first actions %v: want only a (b waits for a again)", d.Actions)
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if st.RunState != muster.RunSucceeded || st.Tasks["b"].State != muster.StateSucceeded || st.Tasks["a"].Attempts != 2 {
		t.Fatalf("after the pass: run %s, b %s, a attempts %d", st.RunState, st.Tasks["b"].State, st.Tasks["a"].Attempts)
	}
	// Only a succeeded task reopens.
	if err := st.Apply(&muster.Event{Type: muster.EvTaskReopened, Task: "zz"}); err == nil {
		t.Error("an unknown task reopened")
	}
}

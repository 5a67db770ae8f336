package engine_test

import (
	"math"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
)

// expectedSim is a run of plan whose TasksPlanned carries exp.
func expectedSim(t *testing.T, p *muster.Plan, clones int, exp map[muster.TaskID]float64) *enginetest.Sim {
	t.Helper()
	sim := &enginetest.Sim{State: engine.NewState(), Now: t0}
	if err := sim.Emit(muster.Event{Type: muster.EvRunStarted, Schema: muster.SchemaVersion, Run: "sim", Config: enginetest.Crew(clones)}); err != nil {
		t.Fatal(err)
	}
	if err := sim.Emit(muster.Event{Type: muster.EvTasksPlanned, Tasks: p.Tasks, Expected: exp}); err != nil {
		t.Fatal(err)
	}
	return sim
}

// Durations an earlier run measured order the ready tasks longest first
// (the rest by plan order), and with them a crew of independent tasks
// packs: 1, 2 and 3 s tasks in plan order on two clones take 6 s; the
// 3 s ones first, 5 s. A task with no measure weighs the median.
func TestExpectedDurationsOrderReadyTasks(t *testing.T) {
	p := plan("a1", "b2", "c3", "d1", "e2", "f3")
	secs := map[muster.TaskID]float64{"a1": 1, "b2": 2, "c3": 3, "d1": 1, "e2": 2, "f3": 3}
	run := func(exp map[muster.TaskID]float64) time.Duration {
		sim := expectedSim(t, p, 2, exp)
		sim.Script = func(id muster.TaskID, _ int) enginetest.Outcome {
			return enginetest.Outcome{Duration: time.Duration(secs[id] * float64(time.Second))}
		}
		span, err := sim.Run()
		if err != nil {
			t.Fatal(err)
		}
		return span
	}
	if got := run(nil); got != 7*time.Second {
		t.Fatalf("plan order: makespan %v, want 7s", got)
	}
	if got := run(secs); got != 6*time.Second {
		t.Fatalf("longest first: makespan %v, want 6s", got)
	}

	// Unknown and nonsense values: e2 unknown weighs the median of the
	// known (1, 2, 3, 3: 2.5), so it comes after the 3 s tasks and before
	// the 2 s one; a NaN hint is none, and a task not in the plan counts
	// for nothing.
	exp := map[muster.TaskID]float64{"a1": 1, "b2": 2, "c3": 3, "d1": math.NaN(), "f3": 3, "x": math.Inf(1), "elsewhere": 100}
	sim := expectedSim(t, p, 6, exp)
	var order []muster.TaskID
	for _, a := range engine.Decide(sim.State, engine.Input{Now: t0}).Actions {
		order = append(order, a.Task)
	}
	want := []muster.TaskID{"c3", "f3", "d1", "e2", "b2", "a1"}
	if len(order) != len(want) {
		t.Fatalf("started %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("started %v, want %v (d1's NaN is no hint: the median, 2.5, as e2)", order, want)
		}
	}
}

// The hints are journal facts: a state replayed from the journal orders
// as the live one did.
func TestExpectedDurationsReplay(t *testing.T) {
	p := plan("short", "long")
	sim := expectedSim(t, p, 1, map[muster.TaskID]float64{"short": 1, "long": 100, "gone": -5})
	st, err := engine.Replay(sim.Events)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*engine.State{sim.State, st} {
		d := engine.Decide(s, engine.Input{Now: t0})
		if len(d.Actions) != 1 || d.Actions[0].Task != "long" {
			t.Fatalf("actions %+v, want long first", d.Actions)
		}
	}
}

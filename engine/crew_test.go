package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
)

// fleetCrew is a fleet run's crew at its start: e1 (one clone) only.
func fleetCrew() *muster.Config {
	cfg := enginetest.Crew(1)
	cfg.Executors[0].Fleet = true
	cfg.Fleet.NATS = "nats://127.0.0.1:4222"
	cfg.Fleet.JoinWait = time.Minute
	return cfg
}

func joined(name string, clones int) muster.Event {
	return muster.Event{Type: muster.EvExecutorJoined, Executor: name, Worker: "wb",
		Spec: &muster.ExecutorSpec{Name: name, Kind: muster.ExecSim, Clones: clones}}
}

// TestExecutorJoinedMidRun: a task that names an executor the crew does
// not have waits (while others run, and then [fleet] join_wait once
// nothing runs); the ExecutorJoined of a worker serving it makes it
// schedulable there, and tasks of any executor use the new clones too.
func TestExecutorJoinedMidRun(t *testing.T) {
	p := plan("a", "b", "c")
	p.Tasks[1].Executor = "y"
	cfg := fleetCrew()
	sim, err := enginetest.New(p, cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	d := engine.Decide(sim.State, engine.Input{Now: t0})
	if len(d.Actions) != 1 || d.Actions[0].Task != "a" || d.Actions[0].Executor != "e1" {
		t.Fatalf("first decision %v", d.Actions)
	}
	if err := sim.Emit(joined("y", 2)); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Executors) != 1 {
		t.Fatal("the fold changed the RunStarted's config in place")
	}
	if e := sim.State.Config.Executor("y"); e == nil || !e.Fleet || e.Clones != 2 {
		t.Fatalf("joined spec %+v", e)
	}
	d = engine.Decide(sim.State, engine.Input{Now: t0})
	got := map[muster.TaskID]string{}
	for _, a := range d.Actions {
		got[a.Task] = a.Executor
	}
	// a (most free clones: y has two) and b on y, c on y's other clone.
	if got["b"] != "y" || len(got) != 3 {
		t.Fatalf("after the join: %v", d.Actions)
	}
	// A second join of a known name changes nothing.
	before := sim.State.Config
	if err := sim.Emit(joined("e1", 5)); err != nil {
		t.Fatal(err)
	}
	if sim.State.Config != before {
		t.Fatal("a join of a known executor changed the crew")
	}
	// Replay (a resume) has the crew the run had.
	st, err := engine.Replay(sim.Events)
	if err != nil {
		t.Fatal(err)
	}
	if e := st.Config.Executor("y"); e == nil || e.Clones != 2 {
		t.Fatalf("replayed crew: %+v", st.Config.Executors)
	}
}

// TestUnservedTaskWaitsForAJoin: with nothing else to do, a fleet run
// waits [fleet] join_wait for a worker serving the task's executor, says
// so, and then skips it with a reason that names the executor and the
// wait; a run without a fleet skips it at once.
func TestUnservedTaskWaitsForAJoin(t *testing.T) {
	p := plan("b")
	p.Tasks[0].Executor = "y"
	sim, err := enginetest.New(p, fleetCrew(), t0)
	if err != nil {
		t.Fatal(err)
	}
	d := engine.Decide(sim.State, engine.Input{Now: t0.Add(time.Second)})
	if len(d.Actions) != 0 || !d.WakeAt.Equal(t0.Add(time.Minute)) || !strings.Contains(d.Waiting, "executor y") || !strings.Contains(d.Waiting, "join_wait") {
		t.Fatalf("waiting: %v %v %q", d.Actions, d.WakeAt, d.Waiting)
	}
	if w := sim.State.AwaitingJoin(); len(w) != 1 || w["b"] != "executor y" {
		t.Fatalf("AwaitingJoin %v", w)
	}
	// A Warning (the driver saying what the run waits for) does not
	// move the deadline.
	sim.Now = t0.Add(30 * time.Second)
	if err := sim.Emit(muster.Event{Type: muster.EvWarning, Message: d.Waiting}); err != nil {
		t.Fatal(err)
	}
	if d := engine.Decide(sim.State, engine.Input{Now: sim.Now}); !d.WakeAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after the warning: wake %v", d.WakeAt)
	}
	d = engine.Decide(sim.State, engine.Input{Now: t0.Add(time.Minute)})
	if len(d.Actions) != 1 || d.Actions[0].Kind != engine.ActSkip || !strings.Contains(d.Actions[0].Reason, "executor y") || !strings.Contains(d.Actions[0].Reason, "join_wait (1m0s)") {
		t.Fatalf("after join_wait: %v", d.Actions)
	}

	// Without a fleet: skipped at once, as before.
	local, err := enginetest.New(p, enginetest.Crew(1), t0)
	if err != nil {
		t.Fatal(err)
	}
	if w := local.State.AwaitingJoin(); w != nil {
		t.Fatalf("AwaitingJoin without a fleet: %v", w)
	}
	d = engine.Decide(local.State, engine.Input{Now: t0})
	if len(d.Actions) != 1 || d.Actions[0].Kind != engine.ActSkip || strings.Contains(d.Actions[0].Reason, "join_wait") {
		t.Fatalf("local run: %v", d.Actions)
	}

	// A worker that joins within the wait runs it.
	sim2, _ := enginetest.New(p, fleetCrew(), t0)
	sim2.Now = t0.Add(50 * time.Second)
	if err := sim2.Emit(joined("y", 1)); err != nil {
		t.Fatal(err)
	}
	sim2.Script = func(muster.TaskID, int) enginetest.Outcome { return enginetest.Outcome{Duration: time.Second} }
	if _, err := sim2.Run(); err != nil {
		t.Fatal(err)
	}
	if st := sim2.State.Tasks["b"]; st.State != muster.StateSucceeded || st.Executor != "y" {
		t.Fatalf("b: %s on %s", st.State, st.Executor)
	}
}

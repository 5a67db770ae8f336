package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
)

func TestBudgetStopsTheRunAndResumeFinishesIt(t *testing.T) {
	p := plan("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	cfg := enginetest.Crew(1)
	cfg.Run.BudgetUSDMicros = 4500 // $0.0045; each task spends $0.001
	sim, err := enginetest.New(p, cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	sim.Script = func(muster.TaskID, int) enginetest.Outcome {
		return enginetest.Outcome{Duration: time.Second, CostMicros: 1000}
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	c := sim.State.Counts()
	// The first task starts on no estimate; later ones reserve the
	// average ($0.001): four fit in $0.0045, a fifth would not.
	if c[muster.StateSucceeded] != 4 || c[muster.StateCancelled] != 6 || sim.State.RunState != muster.RunFailed {
		t.Fatalf("counts %v, run %s", c, sim.State.RunState)
	}
	for _, id := range sim.State.Order {
		if ts := sim.State.Tasks[id]; ts.State == muster.StateCancelled && !strings.HasPrefix(ts.Reason, "budget: ") {
			t.Errorf("task %s cancelled for %q, want a budget reason", id, ts.Reason)
		}
	}
	if sim.State.Usage.CostMicros != 4000 {
		t.Fatalf("spent %d", sim.State.Usage.CostMicros)
	}
	// Resume with a raised limit: the spent total counts.
	raised := *cfg
	raised.Run.BudgetUSDMicros = 8000
	if err := sim.Emit(muster.Event{Type: muster.EvRunResumed, Config: &raised}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if c := sim.State.Counts(); c[muster.StateSucceeded] != 8 || sim.State.Usage.CostMicros != 8000 {
		t.Fatalf("after raising to $0.008: counts %v, spent %d", c, sim.State.Usage.CostMicros)
	}
	raised.Run.BudgetUSDMicros = 0
	if err := sim.Emit(muster.Event{Type: muster.EvRunResumed, Config: &raised}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if sim.State.RunState != muster.RunSucceeded {
		t.Fatalf("without a limit: %s %v", sim.State.RunState, sim.State.Counts())
	}
}

func TestTaskBudgetIsItsReservation(t *testing.T) {
	p := plan("a", "b", "c")
	p.Tasks[0].Budget.USDMicros = 3000
	p.Tasks[1].Budget.USDMicros = 3000
	cfg := enginetest.Crew(3)
	cfg.Run.BudgetUSDMicros = 5000
	sim, _ := enginetest.New(p, cfg, t0)
	d := engine.Decide(sim.State, engine.Input{Now: t0})
	// a reserves $0.003; b's $0.003 more would pass $0.005; c has no
	// estimate yet and fits.
	var started []string
	for _, a := range d.Actions {
		if a.Kind == engine.ActStart {
			started = append(started, string(a.Task))
		}
	}
	if strings.Join(started, ",") != "a,c" {
		t.Fatalf("started %v, want a and c", started)
	}
}

func TestOverBudgetAndWarning(t *testing.T) {
	p := plan("a")
	p.Tasks[0].Budget.Tokens = 1000
	cfg := enginetest.Crew(1)
	cfg.Run.BudgetUSDMicros = 10000
	sim, _ := enginetest.New(p, cfg, t0)
	emit := func(e muster.Event) {
		t.Helper()
		if err := sim.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	emit(muster.Event{Type: muster.EvExecutorLeased, Task: "a", Executor: "x", Clone: 1})
	emit(muster.Event{Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "x", Clone: 1})
	emit(muster.Event{Type: muster.EvTokensUsed, Task: "a", Usage: muster.Usage{InputTokens: 900, CostMicros: 7000}})
	if why, _ := sim.State.OverBudget("a"); why != "" || sim.State.BudgetWarning() != "" {
		t.Fatalf("under budget: %q %q", why, sim.State.BudgetWarning())
	}
	emit(muster.Event{Type: muster.EvTokensUsed, Task: "a", Usage: muster.Usage{InputTokens: 101, CostMicros: 1000}})
	why, all := sim.State.OverBudget("a")
	if !strings.Contains(why, "task a spent 1001 tokens of its 1000") || all {
		t.Errorf("task over budget: %q all=%v", why, all)
	}
	w := sim.State.BudgetWarning()
	if !strings.Contains(w, "80%") {
		t.Fatalf("warning %q", w)
	}
	emit(muster.Event{Type: muster.EvWarning, Reason: engine.BudgetWarnReason, Message: w})
	if sim.State.BudgetWarning() != "" {
		t.Error("warned twice")
	}
	emit(muster.Event{Type: muster.EvTokensUsed, Task: "a", Usage: muster.Usage{CostMicros: 3000}})
	if why, all := sim.State.OverBudget("a"); !all || !strings.Contains(why, "the run spent $0.0110 of $0.0100") {
		t.Errorf("run over budget: %q all=%v", why, all)
	}
	// A resume with a raised limit warns again at 80 % of it; the same
	// limit does not.
	same := *cfg
	emit(muster.Event{Type: muster.EvRunResumed, Config: &same})
	if w := sim.State.BudgetWarning(); w != "" {
		t.Errorf("the same limit warned again: %q", w)
	}
	raised := *cfg
	raised.Run.BudgetUSDMicros = 12000
	emit(muster.Event{Type: muster.EvRunResumed, Config: &raised})
	if w := sim.State.BudgetWarning(); !strings.Contains(w, "of its $0.0120") {
		t.Errorf("a raised limit: warning %q", w)
	}
}

func TestOrphansCarryTheAgentPID(t *testing.T) {
	sim, _ := enginetest.New(plan("a"), enginetest.Crew(1), t0)
	for _, e := range []muster.Event{
		{Type: muster.EvExecutorLeased, Task: "a", Executor: "x", Clone: 1},
		{Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "x", Clone: 1},
		{Type: muster.EvAgentStarted, Task: "a", Executor: "x", Clone: 1, PID: 4242},
	} {
		if err := sim.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	o := engine.Orphans(sim.State)
	if len(o) != 1 || o[0].PID != 4242 || !o[0].Running {
		t.Fatalf("orphans %+v", o)
	}
}

func TestDependentsOfBudgetStoppedWorkAreCancelledForTheBudget(t *testing.T) {
	sim, _ := enginetest.New(plan("a", "b:a", "c:b"), enginetest.Crew(1), t0)
	for _, e := range []muster.Event{
		{Type: muster.EvExecutorLeased, Task: "a", Executor: "e1", Clone: 1},
		{Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "e1", Clone: 1},
		{Type: muster.EvTaskCancelled, Task: "a", Attempt: 1, Reason: "budget: task a spent $2 of its $1"},
		{Type: muster.EvExecutorRelease, Task: "a", Executor: "e1", Clone: 1},
	} {
		if err := sim.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []muster.TaskID{"b", "c"} {
		if ts := sim.State.Tasks[id]; ts.State != muster.StateCancelled || !strings.HasPrefix(ts.Reason, "budget: not started") {
			t.Errorf("task %s: %s %q", id, ts.State, ts.Reason)
		}
	}
	if sim.State.RunState != muster.RunFailed {
		t.Errorf("run %s", sim.State.RunState)
	}
}

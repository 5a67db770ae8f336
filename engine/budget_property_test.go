package engine_test

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine/enginetest"
)

// When every task's budget is what it will cost, reservations are exact:
// a run never spends more than its budget, ends, leaves only work
// stopped for the budget, and a resume without a limit finishes it with
// every task run exactly once.
func TestPropertyBudgetIsNeverExceeded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPlan(t)
		cost := map[muster.TaskID]int64{}
		var total int64
		for _, task := range p.Tasks {
			c := int64(rapid.IntRange(1, 1000).Draw(t, "cost"))
			task.Budget.USDMicros = c
			cost[task.ID] = c
			total += c
		}
		cfg := genConfig(t)
		cfg.Run.OnFailure = ""
		cfg.Run.BudgetUSDMicros = rapid.Int64Range(1, total+1).Draw(t, "budget")
		sim, err := enginetest.New(p, cfg, t0)
		if err != nil {
			t.Fatal(err)
		}
		attempts := map[muster.TaskID]int{}
		sim.Script = func(id muster.TaskID, _ int) enginetest.Outcome {
			attempts[id]++
			return enginetest.Outcome{Duration: 1e9, CostMicros: cost[id]}
		}
		if _, err := sim.Run(); err != nil {
			t.Fatal(err)
		}
		if spent := sim.State.Usage.CostMicros; spent > cfg.Run.BudgetUSDMicros {
			t.Fatalf("spent %d of a budget of %d", spent, cfg.Run.BudgetUSDMicros)
		}
		for _, id := range sim.State.Order {
			ts := sim.State.Tasks[id]
			if ts.State != muster.StateSucceeded && (ts.State != muster.StateCancelled || !strings.HasPrefix(ts.Reason, "budget: ")) {
				t.Fatalf("task %s: %s %q", id, ts.State, ts.Reason)
			}
		}
		raised := *cfg
		raised.Run.BudgetUSDMicros = 0
		if err := sim.Emit(muster.Event{Type: muster.EvRunResumed, Config: &raised}); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.Run(); err != nil {
			t.Fatal(err)
		}
		if sim.State.RunState != muster.RunSucceeded || sim.State.Usage.CostMicros != total {
			t.Fatalf("after the resume: %s, spent %d of %d", sim.State.RunState, sim.State.Usage.CostMicros, total)
		}
		for id, n := range attempts {
			if n != 1 {
				t.Fatalf("task %s ran %d times", id, n)
			}
		}
	})
}

package fleet

import (
	"math"
	"testing"

	"github.com/muster-run/muster"
)

// TestRegistrationCannotInflateTheCrew (red team): a registration is a
// worker's word. A worker holding fleet credentials that registers an
// executor with a billion clones (or clones that overflow when the
// workers' are summed) would have the orchestrator's scheduler count
// through every clone at each decision, and muster status and the live
// view make a lane for each: the run hangs. Nor may it bring an executor
// whose name no config could give (empty, a slot's '#', a path), at the
// run's start any more than mid-run.
func TestRegistrationCannotInflateTheCrew(t *testing.T) {
	huge := Registration{Name: "w1", Executors: []ExecutorState{{Name: "x", Kind: muster.ExecClaudeCode, Clones: 1 << 40}}}
	for _, s := range NewExecutors(huge, map[string]bool{}) {
		if s.Clones < 1 || s.Clones > muster.MaxClones {
			t.Errorf("joined mid-run: executor %s with %d clones (at most %d)", s.Name, s.Clones, muster.MaxClones)
		}
	}
	workers := []WorkerInfo{
		{Registration: huge},
		{Registration: Registration{Name: "w2", Executors: []ExecutorState{
			{Name: "x", Kind: muster.ExecClaudeCode, Clones: math.MaxInt},
			{Name: "y", Clones: 900}, {Name: "", Clones: 1}, {Name: "y#1", Clones: 1}, {Name: "../../z", Clones: 1},
		}}},
		{Registration: Registration{Name: "w3", Executors: []ExecutorState{{Name: "y", Clones: 900}}}},
	}
	names := map[string]bool{}
	for _, s := range Crew(workers) {
		names[s.Name] = true
		if s.Clones < 1 || s.Clones > muster.MaxClones {
			t.Errorf("at the start: executor %s with %d clones (at most %d)", s.Name, s.Clones, muster.MaxClones)
		}
	}
	if !names["x"] || !names["y"] || len(names) != 2 {
		t.Errorf("the crew at the start is %v, want x and y only", names)
	}
}

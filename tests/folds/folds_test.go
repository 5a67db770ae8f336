// Package folds checks that the folds of a run's journal agree. The
// engine's state, the views' runview.Run, the receipt and the cost report
// each fold the same events for their own purpose; they have drifted
// before, so this property test runs random plans on the engine's virtual
// clock (failures, retries, budgets, cut short as by a crash) and compares
// what each says of every task and of the money.
package folds

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
	"github.com/muster-run/muster/receipt"
	"github.com/muster-run/muster/report"
	"github.com/muster-run/muster/runlog"
	"github.com/muster-run/muster/runview"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func randomRun(t *rapid.T) []muster.Event {
	n := rapid.IntRange(1, 15).Draw(t, "tasks")
	plan := &muster.Plan{}
	for i := range n {
		task := &muster.Task{ID: muster.TaskID(fmt.Sprintf("t%d", i)), Title: "x"}
		for j := range i {
			if rapid.IntRange(0, 5).Draw(t, "edge") == 0 {
				task.After = append(task.After, muster.TaskID(fmt.Sprintf("t%d", j)))
			}
		}
		task.Retries = rapid.IntRange(0, 2).Draw(t, "retries")
		plan.Tasks = append(plan.Tasks, task)
	}
	cfg := enginetest.Crew(rapid.SliceOfN(rapid.IntRange(1, 3), 1, 3).Draw(t, "clones")...)
	if rapid.Bool().Draw(t, "stop") {
		cfg.Run.OnFailure = muster.OnFailureStop
	}
	if rapid.Bool().Draw(t, "budget") {
		cfg.Run.BudgetUSDMicros = rapid.Int64Range(1, 200_000).Draw(t, "budget_micros")
	}
	sim, err := enginetest.New(plan, cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	sim.Script = func(id muster.TaskID, attempt int) enginetest.Outcome {
		fail := rapid.IntRange(0, 3).Draw(t, "fail") == 0
		return enginetest.Outcome{
			Duration:   time.Duration(rapid.IntRange(1, 60).Draw(t, "secs")) * time.Second,
			Fail:       fail,
			Retry:      fail && rapid.Bool().Draw(t, "retry"),
			CostMicros: rapid.Int64Range(0, 40_000).Draw(t, "cost"),
		}
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	adopted := rapid.Bool().Draw(t, "adopt")
	if adopted {
		adopt(t, sim)
	}
	evs := sim.Events
	// A crash: the journal ends anywhere. (Not inside a resumed part: the
	// receipt and the views keep a task's last end where the engine makes
	// it pending again until it restarts.)
	if !adopted && rapid.Bool().Draw(t, "cut") {
		evs = evs[:rapid.IntRange(2, len(evs)).Draw(t, "cut_at")]
	}
	return evs
}

// adopt resumes the ended run with an edited plan (PlanAdopted, as muster
// resume journals it): some tasks that have not succeeded get a new
// prompt and dependencies, new tasks join after any task, and the run
// goes on to its end.
func adopt(t *rapid.T, sim *enginetest.Sim) {
	if err := sim.Emit(muster.Event{Type: muster.EvRunResumed}); err != nil {
		t.Fatal(err)
	}
	st := sim.State
	var changed []*muster.Task
	for _, id := range st.Order {
		if !st.Adoptable(id) || !rapid.Bool().Draw(t, "edit") {
			continue
		}
		c := *st.Tasks[id].Task
		c.Prompt = "edited"
		changed = append(changed, &c)
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "added") {
		nt := &muster.Task{ID: muster.TaskID(fmt.Sprintf("n%d", i)), Title: "new"}
		for _, id := range st.Order {
			if rapid.IntRange(0, 3).Draw(t, "new_edge") == 0 {
				nt.After = append(nt.After, id)
			}
		}
		changed = append(changed, nt)
	}
	if err := sim.Emit(muster.Event{Type: muster.EvPlanAdopted, Plan: "plan-2.md", PlanHash: "h", Tasks: changed}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	// The engine that lived through the adoption and one that replays
	// the journal agree on every task's state and definition.
	re, err := engine.Replay(sim.Events)
	if err != nil {
		t.Fatal(err)
	}
	for id, lt := range st.Tasks {
		rt := re.Tasks[id]
		if rt == nil || rt.State != lt.State || rt.Task.Prompt != lt.Task.Prompt || rt.Attempts != lt.Attempts || len(rt.Task.After) != len(lt.Task.After) {
			t.Fatalf("task %s: replayed %+v, live %+v", id, rt, lt)
		}
	}
}

func TestFoldsAgree(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		evs := randomRun(t)
		st, err := engine.Replay(evs)
		if err != nil {
			t.Fatal(err)
		}
		view := runview.Fold(evs)
		rc := receipt.Fold(evs)
		rep := report.Build([][]muster.Event{evs}, report.Options{})

		// Money: every fold adds up the same usage.
		cost := st.Usage.CostMicros
		for name, got := range map[string]int64{"runview": view.Usage.CostMicros, "receipt": rc.Usage.CostMicros, "report": rep.Totals.CostMicros} {
			if got != cost {
				t.Fatalf("%s counts %s, the engine %s", name, muster.FormatUSD(got), muster.FormatUSD(cost))
			}
		}
		// Tasks: the same state everywhere (a running task is running in
		// the views; the receipt of a cut journal says running too).
		succeeded, failed := 0, 0
		for id, et := range st.Tasks {
			if vt := view.Tasks[id]; vt == nil || vt.State != et.State {
				t.Fatalf("task %s: engine %s, runview %v", id, et.State, vt)
			}
			var rs muster.TaskState
			for _, r := range rc.Tasks {
				if r.ID == id {
					rs = r.State
				}
			}
			if rs != et.State {
				t.Fatalf("task %s: engine %s, receipt %s", id, et.State, rs)
			}
			if _, err := runlog.Build(evs, "", runlog.Query{Task: id}); err != nil {
				t.Fatalf("task %s: runlog: %v", id, err)
			}
			switch et.State {
			case muster.StateSucceeded:
				succeeded++
			case muster.StateFailed:
				failed++
			}
		}
		if len(rep.Runs) != 1 || rep.Runs[0].Succeeded != succeeded || rep.Runs[0].Failed != failed {
			t.Fatalf("report runs %+v; the engine: %d succeeded, %d failed", rep.Runs, succeeded, failed)
		}
	})
}

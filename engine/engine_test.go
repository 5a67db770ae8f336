package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func plan(specs ...string) *muster.Plan {
	// "id:dep1,dep2"
	p := &muster.Plan{}
	for _, s := range specs {
		id, deps, _ := strings.Cut(s, ":")
		t := &muster.Task{ID: muster.TaskID(id), Title: id}
		for _, d := range strings.Split(deps, ",") {
			if d != "" {
				t.After = append(t.After, muster.TaskID(d))
			}
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p
}

func TestDiamondRunsInParallelWithoutWaves(t *testing.T) {
	p := plan("a", "b:a", "c:a", "d:b,c", "e")
	durations := map[muster.TaskID]time.Duration{"a": 1 * time.Second, "b": 5 * time.Second, "c": 1 * time.Second, "d": 1 * time.Second, "e": 2 * time.Second}
	sim, err := enginetest.New(p, enginetest.Crew(2), t0)
	if err != nil {
		t.Fatal(err)
	}
	sim.Script = func(id muster.TaskID, _ int) enginetest.Outcome { return enginetest.Outcome{Duration: durations[id]} }
	span, err := sim.Run()
	if err != nil {
		t.Fatal(err)
	}
	// a and e start at once (a first: longest path); b, c after a.
	// Critical path a-b-d = 7s; two clones finish it in 7s.
	if span != 7*time.Second {
		t.Fatalf("makespan %v, want 7s", span)
	}
	if got := sim.State.RunState; got != muster.RunSucceeded {
		t.Fatalf("run state %s", got)
	}
}

func TestPriorityLongestPathFirst(t *testing.T) {
	// With one clone, the chain head must go before the lone task even
	// though the lone task comes first in plan order.
	p := plan("lone", "head", "mid:head", "tail:mid")
	sim, _ := enginetest.New(p, enginetest.Crew(1), t0)
	d := engine.Decide(sim.State, engine.Input{Now: t0})
	if len(d.Actions) != 1 || d.Actions[0].Task != "head" {
		t.Fatalf("actions %v", d.Actions)
	}
}

func TestFailureSkipsDependentsNamingTheDependency(t *testing.T) {
	p := plan("a", "b:a", "c:b", "d")
	sim, _ := enginetest.New(p, enginetest.Crew(2), t0)
	sim.Script = func(id muster.TaskID, _ int) enginetest.Outcome {
		return enginetest.Outcome{Duration: time.Second, Fail: id == "a"}
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	st := sim.State
	if st.Tasks["b"].State != muster.StateSkipped || st.Tasks["b"].Reason != "dependency a failed" {
		t.Fatalf("b: %s %q", st.Tasks["b"].State, st.Tasks["b"].Reason)
	}
	if st.Tasks["c"].Reason != "dependency b was skipped" {
		t.Fatalf("c: %q", st.Tasks["c"].Reason)
	}
	if st.Tasks["d"].State != muster.StateSucceeded || st.RunState != muster.RunFailed {
		t.Fatalf("d %s run %s", st.Tasks["d"].State, st.RunState)
	}
}

func TestOnFailureStop(t *testing.T) {
	p := plan("a", "b", "c", "d")
	cfg := enginetest.Crew(1)
	cfg.Run.OnFailure = muster.OnFailureStop
	sim, _ := enginetest.New(p, cfg, t0)
	sim.Script = func(id muster.TaskID, _ int) enginetest.Outcome {
		return enginetest.Outcome{Duration: time.Second, Fail: id == "b"}
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	c := sim.State.Counts()
	if c[muster.StateSucceeded] != 1 || c[muster.StateFailed] != 1 || c[muster.StateSkipped] != 2 {
		t.Fatalf("counts %v", c)
	}
	if r := sim.State.Tasks["d"].Reason; !strings.Contains(r, "stopped after b failed") {
		t.Fatalf("reason %q", r)
	}
}

func TestRetryThenSucceed(t *testing.T) {
	p := plan("a", "b:a")
	sim, _ := enginetest.New(p, enginetest.Crew(1), t0)
	sim.Script = func(id muster.TaskID, attempt int) enginetest.Outcome {
		return enginetest.Outcome{Duration: time.Second, Fail: id == "a" && attempt == 1, Retry: true}
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if a := sim.State.Tasks["a"]; a.State != muster.StateSucceeded || a.Attempts != 2 {
		t.Fatalf("a %s attempts %d", a.State, a.Attempts)
	}
}

func TestMaxParallelAndWriters(t *testing.T) {
	p := plan("w1", "w2", "w3", "r1", "r2")
	for _, id := range []muster.TaskID{"r1", "r2"} {
		p.Task(id).Authority = muster.AuthorityRead
	}
	cfg := enginetest.Crew(5)
	cfg.Run.Writers = 1
	sim, _ := enginetest.New(p, cfg, t0)
	d := engine.Decide(sim.State, engine.Input{Now: t0})
	var got []string
	for _, a := range d.Actions {
		got = append(got, string(a.Task))
	}
	if strings.Join(got, ",") != "w1,r1,r2" {
		t.Fatalf("single writer: started %v", got)
	}
	cfg2 := enginetest.Crew(5)
	cfg2.Run.MaxParallel = 2
	sim2, _ := enginetest.New(p, cfg2, t0)
	if d := engine.Decide(sim2.State, engine.Input{Now: t0}); len(d.Actions) != 2 {
		t.Fatalf("max_parallel: %v", d.Actions)
	}
}

func TestNamedExecutorAndRoles(t *testing.T) {
	p := plan("a", "b", "c")
	p.Task("a").Executor = "e2"
	p.Task("c").Role = "tester"
	cfg := enginetest.Crew(1, 1)
	cfg.Executors[1].Roles = []muster.Role{"coder", "tester"}
	sim, _ := enginetest.New(p, cfg, t0)
	d := engine.Decide(sim.State, engine.Input{Now: t0})
	got := map[muster.TaskID]string{}
	for _, a := range d.Actions {
		got[a.Task] = a.Executor
	}
	if got["a"] != "e2" || got["b"] != "e1" || len(got) != 2 {
		t.Fatalf("got %v", got)
	}
}

func TestModelPicksTheExecutorsThatListIt(t *testing.T) {
	p := plan("a", "b", "c")
	p.Task("a").Model = "big"
	p.Task("c").Model = "none-lists-it"
	cfg := enginetest.Crew(2, 2)
	cfg.Executors[0].Models = []string{"small"}
	cfg.Executors[1].Models = []string{"small", "big"}
	sim, _ := enginetest.New(p, cfg, t0)
	d := engine.Decide(sim.State, engine.Input{Now: t0})
	got := map[muster.TaskID]string{}
	for _, a := range d.Actions {
		got[a.Task] = a.Executor
	}
	if got["a"] != "e2" || got["b"] == "" || got["c"] != "" {
		t.Fatalf("got %v", got)
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if r := sim.State.Tasks["c"].Reason; !strings.Contains(r, "model none-lists-it") {
		t.Fatalf("reason %q", r)
	}
}

func TestUnrunnableTaskIsSkippedNotHung(t *testing.T) {
	p := plan("a")
	p.Task("a").Executor = "ghost"
	sim, _ := enginetest.New(p, enginetest.Crew(1), t0)
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if r := sim.State.Tasks["a"].Reason; !strings.Contains(r, "no executor") {
		t.Fatalf("reason %q", r)
	}
}

func TestUsageLimitPausesExecutorOnly(t *testing.T) {
	p := plan("a", "b")
	sim, _ := enginetest.New(p, enginetest.Crew(1, 1), t0)
	sim.State.BlockedUntil["e1"] = t0.Add(time.Hour)
	d := engine.Decide(sim.State, engine.Input{Now: t0})
	if len(d.Actions) != 1 || d.Actions[0].Executor != "e2" {
		t.Fatalf("actions %v", d.Actions)
	}
}

func TestDoneTasksCountAsSucceeded(t *testing.T) {
	p := plan("a", "b:a")
	p.Task("a").Done = true
	sim, _ := enginetest.New(p, enginetest.Crew(1), t0)
	d := engine.Decide(sim.State, engine.Input{Now: t0})
	if len(d.Actions) != 1 || d.Actions[0].Task != "b" {
		t.Fatalf("%v", d.Actions)
	}
}

func TestApplyRejectsBrokenSequences(t *testing.T) {
	p := plan("a", "b:a")
	sim, _ := enginetest.New(p, enginetest.Crew(1), t0)
	err := sim.Emit(muster.Event{Type: muster.EvTaskStarted, Task: "b", Attempt: 1, Executor: "e1", Clone: 1})
	if err == nil || !strings.Contains(err.Error(), "waiting on 1") {
		t.Fatalf("err %v", err)
	}
	sim.Emit(muster.Event{Type: muster.EvExecutorLeased, Task: "a", Executor: "e1", Clone: 1})
	if err := sim.Emit(muster.Event{Type: muster.EvExecutorLeased, Task: "b", Executor: "e1", Clone: 1}); err == nil {
		t.Fatal("double lease accepted")
	}
}

func TestResumeResetsUnfinished(t *testing.T) {
	p := plan("a", "b:a", "c")
	sim, _ := enginetest.New(p, enginetest.Crew(1), t0)
	sim.Script = func(id muster.TaskID, attempt int) enginetest.Outcome {
		return enginetest.Outcome{Duration: time.Second, Fail: id == "a"}
	}
	sim.Run()
	sim.Emit(muster.Event{Type: muster.EvRunResumed})
	if sim.State.Tasks["a"].State != muster.StatePending || sim.State.Tasks["b"].State != muster.StatePending {
		t.Fatal("not reset")
	}
	sim.Script = nil
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if sim.State.RunState != muster.RunSucceeded {
		t.Fatalf("state %s", sim.State.RunState)
	}
	if c := sim.State.Tasks["c"].Attempts; c != 1 {
		t.Fatalf("succeeded task re-run: %d", c)
	}
}

func TestOrphans(t *testing.T) {
	p := plan("a", "b")
	sim, _ := enginetest.New(p, enginetest.Crew(2), t0)
	sim.Emit(muster.Event{Type: muster.EvExecutorLeased, Task: "a", Executor: "e1", Clone: 1})
	sim.Emit(muster.Event{Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "e1", Clone: 1})
	sim.Emit(muster.Event{Type: muster.EvExecutorLeased, Task: "b", Executor: "e1", Clone: 2})
	o := engine.Orphans(sim.State)
	if len(o) != 2 || !o[0].Running || o[1].Running {
		t.Fatalf("orphans %+v", o)
	}
}

func ExampleDecide() {
	p := plan("api", "route:api", "docs")
	sim, _ := enginetest.New(p, enginetest.Crew(2), t0)
	for _, a := range engine.Decide(sim.State, engine.Input{Now: t0}).Actions {
		fmt.Println(a)
	}
	// Output:
	// start api#1 on e1#1
	// start docs#1 on e1#2
}

// A task whose coder gave its clone back while its commit waits for
// integration still runs: the run does not finish under it, a crash
// then finds it an orphan once (also when another task holds its clone
// now), and a fix round's lease of another clone moves it there.
func TestCommitWaitingWithoutAClone(t *testing.T) {
	sim, _ := enginetest.New(plan("a", "b"), enginetest.Crew(1), t0)
	for _, e := range []muster.Event{
		{Type: muster.EvExecutorLeased, Task: "a", Executor: "e1", Clone: 1},
		{Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "e1", Clone: 1},
		{Type: muster.EvExecutorRelease, Task: "a", Executor: "e1", Clone: 1},
	} {
		if err := sim.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	if !sim.State.Working() {
		t.Fatal("a's commit waits, yet nothing is under way")
	}
	for _, a := range engine.Decide(sim.State, engine.Input{Now: t0}).Actions {
		if a.Kind == engine.ActFinish {
			t.Fatalf("the run finished while a's commit waits: %+v", a)
		}
	}
	for _, e := range []muster.Event{
		{Type: muster.EvExecutorLeased, Task: "b", Executor: "e1", Clone: 1},
		{Type: muster.EvTaskStarted, Task: "b", Attempt: 1, Executor: "e1", Clone: 1},
	} {
		if err := sim.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	var running []muster.TaskID
	for _, o := range engine.Orphans(sim.State) {
		if o.Running {
			running = append(running, o.Lease.Task)
		}
	}
	if len(running) != 2 || running[0] != "b" || running[1] != "a" {
		t.Fatalf("running orphans %v, want b (leased) and a (waiting), once each", running)
	}
	if c, ok := engine.FreeClone(sim.State, "e1", 1, t0); ok {
		t.Fatalf("clone %d free while b holds the only one", c)
	}
	if err := sim.Emit(muster.Event{Type: muster.EvTaskSucceeded, Task: "a", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := sim.Emit(muster.Event{Type: muster.EvTaskSucceeded, Task: "b", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := sim.Emit(muster.Event{Type: muster.EvExecutorRelease, Task: "b", Executor: "e1", Clone: 1}); err != nil {
		t.Fatal(err)
	}
	if sim.State.Working() {
		t.Fatal("still under way after both ended")
	}
}

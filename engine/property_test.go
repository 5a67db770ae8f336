package engine_test

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
)

// genPlan draws a random DAG: each task depends on some earlier ones.
func genPlan(t *rapid.T) *muster.Plan {
	n := rapid.IntRange(1, 25).Draw(t, "tasks")
	p := &muster.Plan{}
	for i := 0; i < n; i++ {
		task := &muster.Task{ID: muster.TaskID(fmt.Sprintf("t%d", i)), Title: "x"}
		for j := 0; j < i; j++ {
			if rapid.IntRange(0, 9).Draw(t, "edge") == 0 {
				task.After = append(task.After, muster.TaskID(fmt.Sprintf("t%d", j)))
			}
		}
		if rapid.IntRange(0, 4).Draw(t, "read") == 0 {
			task.Authority = muster.AuthorityRead
		}
		p.Tasks = append(p.Tasks, task)
	}
	return p
}

func genConfig(t *rapid.T) *muster.Config {
	clones := rapid.SliceOfN(rapid.IntRange(1, 4), 1, 3).Draw(t, "clones")
	cfg := enginetest.Crew(clones...)
	cfg.Run.MaxParallel = rapid.IntRange(0, 5).Draw(t, "max_parallel")
	cfg.Run.Writers = rapid.IntRange(0, 2).Draw(t, "writers")
	if rapid.Bool().Draw(t, "stop") {
		cfg.Run.OnFailure = muster.OnFailureStop
	}
	if rapid.Bool().Draw(t, "max_concurrent") {
		cfg.Executors[0].MaxConcurrent = 1
	}
	return cfg
}

type summary struct {
	States   map[muster.TaskID]muster.TaskState
	Attempts map[muster.TaskID]int
	Leases   map[string]engine.Lease
	Ready    []muster.TaskID
	Run      string
	Stopped  string
}

func summarize(s *engine.State) summary {
	sm := summary{States: map[muster.TaskID]muster.TaskState{}, Attempts: map[muster.TaskID]int{}, Leases: map[string]engine.Lease{}, Run: s.RunState, Stopped: s.Stopped, Ready: s.Ready()}
	for id, t := range s.Tasks {
		sm.States[id], sm.Attempts[id] = t.State, t.Attempts
	}
	for k, v := range s.Leases {
		sm.Leases[k] = v
	}
	return sm
}

func TestSchedulerInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPlan(t)
		cfg := genConfig(t)
		failing := map[muster.TaskID]bool{}
		retries := map[muster.TaskID]bool{}
		for _, task := range p.Tasks {
			failing[task.ID] = rapid.IntRange(0, 5).Draw(t, "fail") == 0
			retries[task.ID] = rapid.Bool().Draw(t, "retry")
		}
		durs := rapid.SliceOfN(rapid.IntRange(1, 20), len(p.Tasks), len(p.Tasks)).Draw(t, "durations")
		sim, err := enginetest.New(p, cfg, t0)
		if err != nil {
			t.Fatal(err)
		}
		index := map[muster.TaskID]int{}
		for i, task := range p.Tasks {
			index[task.ID] = i
		}
		sim.Script = func(id muster.TaskID, attempt int) enginetest.Outcome {
			// A retried task fails once, then succeeds.
			fail := failing[id] && (!retries[id] || attempt == 1)
			return enginetest.Outcome{Duration: time.Duration(durs[index[id]]) * time.Second, Fail: fail, Retry: retries[id] && attempt == 1}
		}
		snapshots := map[int64]summary{}
		sim.OnApply = func(s *engine.State, e *muster.Event) {
			if e.Type == muster.EvTaskStarted {
				for _, d := range s.Tasks[e.Task].Task.After {
					if s.Tasks[d].State != muster.StateSucceeded {
						t.Fatalf("%s started before %s succeeded", e.Task, d)
					}
				}
			}
			perExec := map[string]int{}
			coders, writers := 0, 0
			for _, l := range s.Leases {
				perExec[l.Executor]++
				coders++
				if s.Tasks[l.Task].Task.EffectiveAuthority() != muster.AuthorityRead {
					writers++
				}
			}
			for _, ex := range cfg.Executors {
				limit := ex.Clones
				if ex.MaxConcurrent > 0 && ex.MaxConcurrent < limit {
					limit = ex.MaxConcurrent
				}
				if perExec[ex.Name] > limit {
					t.Fatalf("%s has %d leases, limit %d", ex.Name, perExec[ex.Name], limit)
				}
			}
			if cfg.Run.MaxParallel > 0 && coders > cfg.Run.MaxParallel {
				t.Fatalf("%d coders > max_parallel %d", coders, cfg.Run.MaxParallel)
			}
			if cfg.Run.Writers > 0 && writers > cfg.Run.Writers {
				t.Fatalf("%d writers > %d", writers, cfg.Run.Writers)
			}
			snapshots[e.Seq] = summarize(s)
		}
		if _, err := sim.Run(); err != nil {
			t.Fatal(err)
		}
		// Every task ends in exactly one terminal state.
		for id, ts := range sim.State.Tasks {
			if !ts.Terminal() {
				t.Fatalf("%s ended %s", id, ts.State)
			}
		}
		if sim.State.RunState == muster.RunRunning {
			t.Fatal("run not finished")
		}
		// Replaying any prefix rebuilds the same state, and decides the same.
		k := rapid.IntRange(3, len(sim.Events)).Draw(t, "prefix")
		re, err := engine.Replay(sim.Events[:k])
		if err != nil {
			t.Fatal(err)
		}
		want := snapshots[int64(k)]
		if got := summarize(re); !reflect.DeepEqual(got, want) {
			t.Fatalf("replay of %d events differs:\n got %+v\nwant %+v", k, got, want)
		}
		// A full replay gives the same decisions as the live state.
		full, _ := engine.Replay(sim.Events)
		a := engine.Decide(full, engine.Input{Now: sim.Now})
		b := engine.Decide(sim.State, engine.Input{Now: sim.Now})
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("decisions differ: %v vs %v", a, b)
		}
	})
}

// Recovery after a cut at any point never starts an attempt twice: the
// orphans are cancelled, the run resumed, and each task ends once.
func TestResumeAfterAnyCut(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPlan(t)
		cfg := genConfig(t)
		cfg.Run.OnFailure = muster.OnFailureContinue
		sim, _ := enginetest.New(p, cfg, t0)
		if _, err := sim.Run(); err != nil {
			t.Fatal(err)
		}
		k := rapid.IntRange(2, len(sim.Events)).Draw(t, "cut")
		st, err := engine.Replay(sim.Events[:k])
		if err != nil {
			t.Fatal(err)
		}
		// Continue from the cut like the driver's resume does.
		r := &enginetest.Sim{State: st, Events: append([]muster.Event(nil), sim.Events[:k]...), Now: sim.Now}
		r.SetSeq(int64(k))
		for _, o := range engine.Orphans(st) {
			if o.Running {
				r.Emit(muster.Event{Type: muster.EvTaskCancelled, Task: o.Lease.Task, Reason: "interrupted"})
			}
			if _, held := st.Leases[muster.Slot(o.Lease.Executor, o.Lease.Clone)]; held {
				r.Emit(muster.Event{Type: muster.EvExecutorRelease, Task: o.Lease.Task, Executor: o.Lease.Executor, Clone: o.Lease.Clone})
			}
		}
		if err := r.Emit(muster.Event{Type: muster.EvRunResumed}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(); err != nil {
			t.Fatal(err)
		}
		if r.State.RunState != muster.RunSucceeded {
			t.Fatalf("resumed run ended %s", r.State.RunState)
		}
		succeeded := map[muster.TaskID]int{}
		for _, e := range r.Events {
			if e.Type == muster.EvTaskSucceeded {
				succeeded[e.Task]++
			}
		}
		var ids []string
		for _, task := range p.Tasks {
			if succeeded[task.ID] != 1 {
				ids = append(ids, string(task.ID))
			}
		}
		sort.Strings(ids)
		if len(ids) > 0 {
			t.Fatalf("tasks not succeeded exactly once: %v", ids)
		}
	})
}

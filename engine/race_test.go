package engine_test

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

var raceKinds = []muster.ExecKind{muster.ExecClaudeCode, muster.ExecCodex, muster.ExecGemini}

// raceStart applies what the driver journals for a race's start.
func raceStart(t interface{ Fatal(...any) }, s *engine.State, a engine.Action, seq *int64) {
	var evs []muster.Event
	for _, c := range a.Race {
		evs = append(evs, muster.Event{Type: muster.EvExecutorLeased, Task: a.Task, Executor: c.Executor, Clone: c.Clone, Role: a.Role})
	}
	evs = append(evs, muster.Event{Type: muster.EvRaceStarted, Task: a.Task, Race: a.Race},
		muster.Event{Type: muster.EvTaskStarted, Task: a.Task, Attempt: a.Attempt, Executor: a.Executor, Clone: a.Clone, Role: a.Role})
	for i := range evs {
		*seq++
		evs[i].Seq, evs[i].Time = *seq, t0
		if err := s.Apply(&evs[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// The race's start decision: up to N distinct free clones, never one
// leased, within max_parallel; distinct kinds first, then distinct
// executors; attempts numbered on from the task's; replayable.
func TestRaceStartInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nExec := rapid.IntRange(1, 5).Draw(t, "executors")
		cfg := &muster.Config{Run: muster.RunConfig{MaxParallel: rapid.IntRange(0, 6).Draw(t, "max_parallel")}}
		for i := range nExec {
			cfg.Executors = append(cfg.Executors, &muster.ExecutorSpec{Name: fmt.Sprintf("e%d", i+1),
				Kind: rapid.SampledFrom(raceKinds).Draw(t, "kind"), Clones: rapid.IntRange(1, 3).Draw(t, "clones")})
		}
		n := rapid.IntRange(2, muster.MaxRace).Draw(t, "race")
		race := &muster.Task{ID: "r", Title: "race", Race: n}
		if rapid.Bool().Draw(t, "candidates") {
			for _, e := range cfg.Executors {
				if rapid.Bool().Draw(t, "candidate") {
					race.Candidates = append(race.Candidates, e.Name)
				}
			}
		}
		other := &muster.Task{ID: "o", Title: "other", Done: true} // its clones busy, nothing of it to start
		s := engine.NewState()
		seq := int64(0)
		apply := func(e muster.Event) {
			seq++
			e.Seq, e.Time = seq, t0
			if err := s.Apply(&e); err != nil {
				t.Fatal(err)
			}
		}
		apply(muster.Event{Type: muster.EvRunStarted, Run: "x", Config: cfg})
		apply(muster.Event{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{other, race}})
		// Some clones busy with the other task first.
		busy := 0
		for _, e := range cfg.Executors {
			for c := 1; c <= e.Clones; c++ {
				if rapid.IntRange(0, 3).Draw(t, "busy") == 0 && (cfg.Run.MaxParallel == 0 || busy < cfg.Run.MaxParallel-1) {
					apply(muster.Event{Type: muster.EvExecutorLeased, Task: "o", Executor: e.Name, Clone: c, Role: muster.RoleCoder})
					busy++
				}
			}
		}
		var act *engine.Action
		for _, a := range engine.Decide(s, engine.Input{Now: t0}).Actions {
			if a.Task == "r" {
				act = &a
			}
		}
		if act == nil {
			return // waiting for clones
		}
		if !act.Racing() || act.RaceSize != n || len(act.Race) == 0 || len(act.Race) > n {
			t.Fatalf("action %+v", act)
		}
		if mp := cfg.Run.MaxParallel; mp > 0 && busy+len(act.Race) > mp {
			t.Fatalf("%d busy + %d candidates > max_parallel %d", busy, len(act.Race), mp)
		}
		seen, kinds, execs := map[string]bool{}, map[muster.ExecKind]bool{}, map[string]bool{}
		for i, c := range act.Race {
			if seen[c.Slot()] {
				t.Fatalf("%s twice", c.Slot())
			}
			seen[c.Slot()] = true
			if _, leased := s.Leases[c.Slot()]; leased {
				t.Fatalf("%s is leased", c.Slot())
			}
			if c.Attempt != i+1 {
				t.Fatalf("candidate %d has attempt %d", i, c.Attempt)
			}
			if len(race.Candidates) > 0 && !slices.Contains(race.Candidates, c.Executor) {
				t.Fatalf("%s is no candidate of %v", c.Executor, race.Candidates)
			}
			kinds[cfg.Executor(c.Executor).Kind], execs[c.Executor] = true, true
		}
		// What was free: distinct kinds and executors first.
		freeKinds, freeExecs := map[muster.ExecKind]bool{}, map[string]bool{}
		for _, e := range cfg.Executors {
			if len(race.Candidates) > 0 && !slices.Contains(race.Candidates, e.Name) {
				continue
			}
			for c := 1; c <= e.Clones; c++ {
				if _, leased := s.Leases[muster.Slot(e.Name, c)]; !leased {
					freeKinds[e.Kind], freeExecs[e.Name] = true, true
				}
			}
		}
		if want := min(len(act.Race), len(freeKinds)); len(kinds) < want {
			t.Fatalf("%d kinds among %v, %d were free", len(kinds), act.Race, len(freeKinds))
		}
		if want := min(len(act.Race), len(freeExecs)); len(execs) < want {
			t.Fatalf("%d executors among %v, %d were free", len(execs), act.Race, len(freeExecs))
		}
		raceStart(t, s, *act, &seq)
		if r := s.Tasks["r"]; r.State != muster.StateRunning || r.Attempts != len(act.Race) || r.Race.Running() != len(act.Race) {
			t.Fatalf("after the start: %s, attempts %d", r.State, r.Attempts)
		}
	})
}

// A race's candidates finish, one wins, the task succeeds: the race is
// done. An interrupted race keeps its finished candidates for the resume,
// which starts only the others.
func TestRaceFoldAndResume(t *testing.T) {
	cfg := &muster.Config{}
	for _, k := range raceKinds {
		cfg.Executors = append(cfg.Executors, &muster.ExecutorSpec{Name: string(k), Kind: k, Clones: 1})
	}
	s := engine.NewState()
	seq := int64(0)
	apply := func(e muster.Event) {
		t.Helper()
		seq++
		e.Seq, e.Time = seq, t0
		if err := s.Apply(&e); err != nil {
			t.Fatal(err)
		}
	}
	apply(muster.Event{Type: muster.EvRunStarted, Run: "x", Config: cfg})
	apply(muster.Event{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "r", Title: "race", Race: 3}}})
	d := engine.Decide(s, engine.Input{Now: t0})
	if len(d.Actions) != 1 || len(d.Actions[0].Race) != 3 {
		t.Fatalf("decision %v", d.Actions)
	}
	raceStart(t, s, d.Actions[0], &seq)
	yes, no := true, false
	c := d.Actions[0].Race
	apply(muster.Event{Type: muster.EvCandidateFinished, Task: "r", Attempt: c[0].Attempt, Passed: &yes, Commit: "c1", Stat: &muster.DiffStat{Added: 5, Files: 1}})
	apply(muster.Event{Type: muster.EvCandidateFinished, Task: "r", Attempt: c[1].Attempt, Passed: &no, Reason: "gate"})
	// The crash: recovery cancels the task and releases every clone.
	apply(muster.Event{Type: muster.EvTaskCancelled, Task: "r", Reason: "interrupted", Cause: muster.CauseInterrupted})
	for _, x := range c {
		apply(muster.Event{Type: muster.EvExecutorRelease, Task: "r", Executor: x.Executor, Clone: x.Clone})
	}
	apply(muster.Event{Type: muster.EvRunResumed})
	d = engine.Decide(s, engine.Input{Now: t0})
	if len(d.Actions) != 1 || len(d.Actions[0].Race) != 1 || d.Actions[0].Race[0].Attempt != 4 {
		t.Fatalf("resumed decision %v: want the one unfinished candidate, attempt 4", d.Actions)
	}
	raceStart(t, s, d.Actions[0], &seq)
	r := s.Tasks["r"].Race
	if len(r.Candidates) != 3 || r.Candidates[0].Commit != "c1" || r.Round != 1 {
		t.Fatalf("race after resume %+v", r)
	}
	apply(muster.Event{Type: muster.EvCandidateFinished, Task: "r", Attempt: 4, Passed: &yes, Commit: "c4", Stat: &muster.DiffStat{Added: 2, Files: 1}})
	if w := engine.Smallest(r.Candidates); w == nil || w.Commit != "c4" {
		t.Fatalf("smallest %+v", w)
	}
	apply(muster.Event{Type: muster.EvRaceWon, Task: "r", Attempt: 4, State: muster.RaceSmallest})
	apply(muster.Event{Type: muster.EvTaskSucceeded, Task: "r", Attempt: 4, Commit: "m"})
	if !r.Done || r.Candidates[r.Winner].Attempt != 4 {
		t.Fatalf("race %+v", r)
	}
}

// RaceOf: the task's key, else [run] race for agent tasks that do not
// delegate; Race: first runs as many as it names.
func TestRaceOf(t *testing.T) {
	cfg := &muster.Config{Run: muster.RunConfig{Race: 3}}
	for _, tc := range []struct {
		task  muster.Task
		cfg   *muster.Config
		n     int
		first bool
	}{
		{muster.Task{Race: 2}, nil, 2, false},
		{muster.Task{}, nil, 0, false},
		{muster.Task{}, cfg, 3, false},
		{muster.Task{Kind: muster.KindCode}, cfg, 0, false},
		{muster.Task{Delegates: true}, cfg, 0, false},
		{muster.Task{RaceFirst: true, Candidates: []string{"a", "b", "c", "d"}}, nil, 4, true},
		{muster.Task{RaceFirst: true}, cfg, 3, true},
		{muster.Task{RaceFirst: true}, nil, 2, true},
		{muster.Task{}, &muster.Config{Run: muster.RunConfig{RaceFirst: true}}, 2, true},
	} {
		if n, first := engine.RaceOf(&tc.task, tc.cfg); n != tc.n || first != tc.first {
			t.Errorf("RaceOf(%+v) = %d, %v; want %d, %v", tc.task, n, first, tc.n, tc.first)
		}
	}
}

// A race's Budget: is each candidate's: finished candidates' spending
// does not stop the race once they are done (the judge, the winner's
// integration still to come), while the whole race may not pass N of it.
func TestRaceBudgetIsPerCandidate(t *testing.T) {
	cfg := &muster.Config{}
	for _, k := range raceKinds {
		cfg.Executors = append(cfg.Executors, &muster.ExecutorSpec{Name: string(k), Kind: k, Clones: 1})
	}
	s := engine.NewState()
	seq := int64(0)
	apply := func(e muster.Event) {
		t.Helper()
		seq++
		e.Seq, e.Time = seq, t0
		if err := s.Apply(&e); err != nil {
			t.Fatal(err)
		}
	}
	apply(muster.Event{Type: muster.EvRunStarted, Run: "x", Config: cfg})
	apply(muster.Event{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "r", Title: "race", Race: 3, Budget: muster.Budget{USDMicros: 1_000_000}}}})
	d := engine.Decide(s, engine.Input{Now: t0})
	raceStart(t, s, d.Actions[0], &seq)
	yes := true
	for _, c := range d.Actions[0].Race {
		apply(muster.Event{Type: muster.EvTokensUsed, Task: "r", Attempt: c.Attempt, Usage: muster.Usage{CostMicros: 800_000}})
		apply(muster.Event{Type: muster.EvCandidateFinished, Task: "r", Attempt: c.Attempt, Passed: &yes, Commit: "c"})
	}
	if why, _ := s.OverBudget("r"); why != "" {
		t.Fatalf("a race of 3 that spent $2.40 of 3 × $1 is over budget: %s", why)
	}
	apply(muster.Event{Type: muster.EvTokensUsed, Task: "r", Usage: muster.Usage{CostMicros: 700_000}})
	if why, _ := s.OverBudget("r"); why == "" {
		t.Fatal("a race of 3 that spent $3.10 of 3 × $1 is not over budget")
	}
}

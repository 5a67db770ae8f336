package runview

import (
	"testing"

	"github.com/muster-run/muster"
)

// The views' fold of a race: each candidate's verdict, gates, change and
// cost; the winner; an interruption leaves the running ones out and the
// resumed race goes on in the same Race.
func TestFoldRace(t *testing.T) {
	yes, no := true, false
	r := Fold([]muster.Event{
		{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a", Title: "A"}}},
		{Type: muster.EvRaceStarted, Task: "a", Race: []muster.RaceCandidate{{Executor: "x", Clone: 1, Attempt: 1}, {Executor: "y", Clone: 1, Attempt: 2}}},
		{Type: muster.EvTaskStarted, Task: "a", Attempt: 2, Executor: "x", Clone: 1},
		{Type: muster.EvGateRan, Task: "a", Attempt: 1, Gate: "g", Passed: &yes},
		{Type: muster.EvTokensUsed, Task: "a", Attempt: 1, Executor: "x", Clone: 1, Usage: muster.Usage{CostMicros: 100}},
		{Type: muster.EvCandidateFinished, Task: "a", Attempt: 1, Executor: "x", Clone: 1, Passed: &yes, Stat: &muster.DiffStat{Added: 2, Files: 1}},
		{Type: muster.EvTaskCancelled, Task: "a", Reason: "interrupted"},
		{Type: muster.EvRunResumed},
		{Type: muster.EvRaceStarted, Task: "a", Race: []muster.RaceCandidate{{Executor: "y", Clone: 1, Attempt: 3}}},
		{Type: muster.EvCandidateFinished, Task: "a", Attempt: 3, Executor: "y", Clone: 1, Passed: &no, Reason: "gate g failed"},
		{Type: muster.EvRaceWon, Task: "a", Attempt: 1, Executor: "x", Clone: 1, State: muster.RaceOnly},
		{Type: muster.EvTaskSucceeded, Task: "a", Attempt: 1, Commit: "c"},
	})
	if len(r.Races) != 1 {
		t.Fatalf("races %+v", r.Races)
	}
	rc := r.Races[0]
	c := rc.Candidates
	if rc.Winner != "x#1" || rc.How != muster.RaceOnly || rc.Usage.CostMicros != 100 || len(c) != 3 ||
		c[0].Verdict != VerdictWon || c[0].GatesOK != 1 || c[0].Stat.Added != 2 || c[0].Usage.CostMicros != 100 ||
		c[1].Verdict != VerdictOut || c[1].Reason != "interrupted" || c[2].Verdict != VerdictOut || c[2].Reason != "gate g failed" {
		t.Fatalf("race %+v", rc)
	}
	if r.Tasks["a"].State != muster.StateSucceeded || r.Tasks["a"].Commit != "c" {
		t.Fatalf("task %+v", r.Tasks["a"])
	}
}

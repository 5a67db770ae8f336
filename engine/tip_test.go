package engine

import (
	"reflect"
	"testing"

	"github.com/muster-run/muster"
)

// The state folds where muster left the run branch: the base, then each
// Integrated commit; an announced move (Integrating) stays pending until
// its Integrated.
func TestStateFoldsTheRunBranchTip(t *testing.T) {
	s, err := Replay([]muster.Event{
		{Seq: 1, Type: muster.EvRunStarted, Run: "r", Base: "b0"},
		{Seq: 2, Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a"}, {ID: "b"}}},
		{Seq: 3, Type: muster.EvIntegrating, Task: "a", Commit: "c1", Tip: "b0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tip != "b0" || s.Moving == nil || !reflect.DeepEqual(*s.Moving, Move{Task: "a", Commit: "c1", From: "b0", Chain: []muster.ChainLink{{Task: "a", Commit: "c1"}}}) {
		t.Fatalf("tip %s moving %+v", s.Tip, s.Moving)
	}
	if err := s.Apply(&muster.Event{Seq: 4, Type: muster.EvIntegrated, Task: "a", Commit: "c1"}); err != nil {
		t.Fatal(err)
	}
	if s.Tip != "c1" || s.Moving != nil || s.Tasks["a"].Commit != "c1" {
		t.Fatalf("after Integrated: tip %s moving %+v", s.Tip, s.Moving)
	}
}

// A batch's move (Integrating with a chain) is pending until the last
// of its Integrated events: the tip stays where the move started, so
// that a resume that finds the branch at the chain's top records the
// rest of the chain.
func TestStateFoldsABatchMove(t *testing.T) {
	s, err := Replay([]muster.Event{
		{Seq: 1, Type: muster.EvRunStarted, Run: "r", Base: "b0"},
		{Seq: 2, Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a"}, {ID: "b"}, {ID: "c"}}},
		{Seq: 3, Type: muster.EvIntegrating, Task: "a", Commit: "m3", Tip: "b0",
			Chain: []muster.ChainLink{{Task: "a", Commit: "c1"}, {Task: "b", Commit: "m2"}, {Task: "c", Commit: "m3"}}},
		{Seq: 4, Type: muster.EvIntegrated, Task: "a", Commit: "c1", Tip: "m3"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tip != "b0" || s.Moving == nil || len(s.Moving.Chain) != 2 || s.Moving.Commit != "m3" || s.Tasks["a"].Commit != "c1" {
		t.Fatalf("mid-batch: tip %s moving %+v", s.Tip, s.Moving)
	}
	for i, l := range []muster.ChainLink{{Task: "b", Commit: "m2"}, {Task: "c", Commit: "m3"}} {
		if err := s.Apply(&muster.Event{Seq: int64(5 + i), Type: muster.EvIntegrated, Task: l.Task, Commit: l.Commit, Tip: "m3"}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Tip != "m3" || s.Moving != nil || s.Tasks["b"].Commit != "m2" || s.Tasks["c"].Commit != "m3" {
		t.Fatalf("after the batch: tip %s moving %+v", s.Tip, s.Moving)
	}
}

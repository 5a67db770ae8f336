package engine

import (
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
	if s.Tip != "b0" || s.Moving == nil || *s.Moving != (Move{Task: "a", Commit: "c1", From: "b0"}) {
		t.Fatalf("tip %s moving %+v", s.Tip, s.Moving)
	}
	if err := s.Apply(&muster.Event{Seq: 4, Type: muster.EvIntegrated, Task: "a", Commit: "c1"}); err != nil {
		t.Fatal(err)
	}
	if s.Tip != "c1" || s.Moving != nil || s.Tasks["a"].Commit != "c1" {
		t.Fatalf("after Integrated: tip %s moving %+v", s.Tip, s.Moving)
	}
}

package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/muster-run/muster/engine"
)

// TestAttemptMachine drives the attempt machine as the worker does, with
// random findings in every round, and checks its promises: rounds are
// bounded, the boundary and empty-change rounds are granted once each, no
// fix round is granted on the last round, a stalemate needs an unchanged
// diff, a round whose checks pass commits, and every attempt ends.
func TestAttemptMachine(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		maxRounds := rapid.IntRange(0, 4).Draw(t, "max_rounds")
		start := rapid.IntRange(0, maxRounds+1).Draw(t, "start")
		m := engine.NewAttempt(start, maxRounds)
		violFixes, emptyFixes, rounds := 0, 0, 0
		for {
			round, ok := m.Next("first")
			if !ok {
				if st := m.Exhausted(); st.Kind != engine.StepFail || !strings.Contains(st.Reason, "still failing") {
					t.Fatalf("exhausted: %+v", st)
				}
				if round <= maxRounds {
					t.Fatalf("exhausted at round %d of %d", round, maxRounds)
				}
				return
			}
			rounds++
			if rounds > maxRounds-start+1 {
				t.Fatalf("%d rounds from %d with max %d", rounds, start, maxRounds)
			}
			last := round == maxRounds
			st, what := roundOf(t, m)
			if st.Kind == engine.StepFix {
				if last {
					t.Fatalf("a fix round granted on the last round (%s)", what)
				}
				switch what {
				case "violation":
					violFixes++
				case "empty":
					emptyFixes++
				}
				if violFixes > 1 || emptyFixes > 1 {
					t.Fatalf("granted %d boundary and %d empty-change rounds", violFixes, emptyFixes)
				}
				if m.Why() == "" {
					t.Fatal("a fix round without a reason")
				}
				continue
			}
			if what == "diff" && st.Kind == engine.StepFail {
				if round == start || !strings.Contains(st.Reason, "stalemate") {
					t.Fatalf("stalemate at round %d (start %d): %+v", round, start, st)
				}
			}
			if what == "commit" && st.Kind != engine.StepGo {
				t.Fatalf("a passing round did not commit: %+v", st)
			}
			return // the attempt ended: failed, succeeded or committed
		}
	})
}

// roundOf runs one round's checks in the worker's order with random
// findings, and returns the step that decided it and which check gave it.
func roundOf(t *rapid.T, m *engine.Attempt) (engine.Step, string) {
	if rapid.IntRange(0, 4).Draw(t, "violation") == 0 {
		st := m.Violation("changed paths outside Owns: x", rapid.Bool().Draw(t, "discard"))
		if st.Kind != engine.StepRevert {
			return st, "violation"
		}
	}
	if rapid.IntRange(0, 4).Draw(t, "empty") == 0 {
		return m.EmptyChange(engine.Empty{
			Satisfied: rapid.IntRange(0, 3).Draw(t, "satisfied") == 0, NoopComplete: rapid.Bool().Draw(t, "noop"),
			Retries: rapid.Bool().Draw(t, "retries")}), "empty"
	}
	sum := fmt.Sprint(rapid.IntRange(0, 2).Draw(t, "diff"))
	if st := m.Diff(sum); st.Kind != engine.StepGo {
		return st, "diff"
	}
	if rapid.IntRange(0, 2).Draw(t, "gate") == 0 {
		return m.Gates("gate test failed"), "gates"
	}
	if rapid.IntRange(0, 2).Draw(t, "review") == 0 {
		return m.Review("review: a major finding", rapid.IntRange(0, 3).Draw(t, "stop") == 0), "review"
	}
	return engine.Step{Kind: engine.StepGo}, "commit"
}

func TestAttemptExamples(t *testing.T) {
	t.Parallel()
	m := engine.NewAttempt(0, 3)
	m.Next("")
	if st := m.Violation("changed paths outside Owns: a", false); st.Kind != engine.StepFix {
		t.Fatalf("first violation: %+v", st)
	}
	m.Next("")
	if st := m.Violation("changed paths outside Owns: a", false); st.Kind != engine.StepFail || st.Reason != "boundary violation: changed paths outside Owns: a" {
		t.Fatalf("second violation: %+v", st)
	}
	m = engine.NewAttempt(0, 3)
	m.Next("")
	if st := m.Diff("d1"); st.Kind != engine.StepGo {
		t.Fatal(st)
	}
	m.Gates("gate test failed")
	m.Next("")
	if st := m.Diff("d1"); st.Kind != engine.StepFail || st.Reason != "stalemate: fix round 1 changed nothing; still failing: gate test failed" {
		t.Fatalf("unchanged diff: %+v", st)
	}
	m = engine.NewAttempt(0, 1)
	m.Next("")
	if st := m.EmptyChange(engine.Empty{}); st.Kind != engine.StepFix {
		t.Fatalf("empty: %+v", st)
	}
	m.Next("")
	if st := m.EmptyChange(engine.Empty{Satisfied: true, Answer: "it holds"}); st.Kind != engine.StepSucceed || st.Reason != "satisfied when asked: it holds" {
		t.Fatalf("satisfied when asked: %+v", st)
	}
}

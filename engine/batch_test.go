package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// overlapSame is the tests' overlap: two Owns lists overlap when they
// share an entry.
func overlapSame(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

func TestSelectBatchProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 20).Draw(t, "waiting")
		var waiting []engine.BatchCandidate
		for i := 0; i < n; i++ {
			var owns []string
			for k := rapid.IntRange(0, 2).Draw(t, "owns"); k > 0; k-- {
				owns = append(owns, fmt.Sprintf("p%d", rapid.IntRange(0, 6).Draw(t, "path")))
			}
			waiting = append(waiting, engine.BatchCandidate{Task: muster.TaskID(fmt.Sprintf("t%d", i)), Owns: owns})
		}
		window := rapid.IntRange(1, 10).Draw(t, "window")
		take := engine.SelectBatch(waiting, window, overlapSame)
		if n == 0 {
			if len(take) != 0 {
				t.Fatalf("took %v of nothing", take)
			}
			return
		}
		if len(take) == 0 || take[0] != 0 {
			t.Fatalf("the first waiting is not taken: %v", take)
		}
		if len(take) > window {
			t.Fatalf("took %d > window %d", len(take), window)
		}
		if !slices.IsSorted(take) {
			t.Fatalf("not in queue order: %v", take)
		}
		for i, a := range take {
			if len(take) > 1 && len(waiting[a].Owns) == 0 {
				t.Fatalf("%s without Owns batched with others: %v", waiting[a].Task, take)
			}
			for _, b := range take[i+1:] {
				if a == b || overlapSame(waiting[a].Owns, waiting[b].Owns) {
					t.Fatalf("%s and %s overlap in one batch", waiting[a].Task, waiting[b].Task)
				}
			}
		}
		// Maximal: a candidate left out before the window filled clashes
		// with one taken or has no Owns.
		if len(take) < window && len(waiting[0].Owns) > 0 {
			for i := range waiting {
				if slices.Contains(take, i) {
					continue
				}
				clash := len(waiting[i].Owns) == 0
				for _, j := range take {
					clash = clash || overlapSame(waiting[i].Owns, waiting[j].Owns)
				}
				if !clash {
					t.Fatalf("%s left out of %v for no reason", waiting[i].Task, take)
				}
			}
		}
	})
}

func TestBisectionFindsABoundaryWithinTheBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 64).Draw(t, "chain")
		lo := rapid.IntRange(0, min(1, n-1)).Draw(t, "lo")
		// fails[k]: prefix k fails; prefix lo passes, the top fails, and
		// anything between (not necessarily monotone: a later commit may
		// fix what an earlier one broke).
		fails := make([]bool, n+1)
		for k := lo + 1; k < n; k++ {
			fails[k] = rapid.Bool().Draw(t, "fails")
		}
		fails[n] = true
		b := engine.Bisection{Lo: lo, Hi: n}
		steps := 0
		for !b.Done() {
			k := b.Next()
			if k <= b.Lo || k >= b.Hi {
				t.Fatalf("gates prefix %d outside (%d, %d)", k, b.Lo, b.Hi)
			}
			b = b.Record(k, fails[k])
			steps++
		}
		c := b.Culprit()
		if !fails[c] || (c-1 != lo && fails[c-1]) || c <= lo || c > n {
			t.Fatalf("culprit %d: prefix %d fails=%v, prefix %d fails=%v", c, c, fails[c], c-1, fails[c-1])
		}
		if steps > engine.BisectSteps(n-lo) || steps > engine.BisectSteps(n) {
			t.Fatalf("%d steps for %d candidates (bound %d)", steps, n-lo, engine.BisectSteps(n-lo))
		}
	})
}

func TestNextWindow(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 16).Draw(t, "max")
		w := rapid.IntRange(1, limit).Draw(t, "window")
		green := rapid.Bool().Draw(t, "green")
		got := engine.NextWindow(w, limit, green)
		want := w / 2
		if green {
			want = w + 1
		}
		want = min(limit, want)
		if want < 1 {
			want = 1
		}
		if got != want || got < 1 || got > limit {
			t.Fatalf("NextWindow(%d, %d, %v) = %d, want %d", w, limit, green, got, want)
		}
	})
	if got := engine.NextWindow(1, 1, true); got != 1 {
		t.Fatalf("max_batch 1 grew to %d", got)
	}
}

func TestBisectSteps(t *testing.T) {
	for n, want := range map[int]int{1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 8: 3, 9: 4} {
		if got := engine.BisectSteps(n); got != want {
			t.Errorf("BisectSteps(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestGrowOnlyWhileTheFirstRunIsYoung(t *testing.T) {
	cases := []struct {
		elapsed, expected time.Duration
		want              bool
	}{
		{0, time.Second, true},
		{99 * time.Millisecond, time.Second, true},
		{100 * time.Millisecond, time.Second, false},
		{time.Minute, 2 * time.Minute, false},
		{0, 0, false}, // no gate time known: no cut
		{-time.Millisecond, time.Second, false},
	}
	for _, c := range cases {
		if got := engine.Grow(c.elapsed, c.expected); got != c.want {
			t.Errorf("Grow(%v, %v) = %v, want %v", c.elapsed, c.expected, got, c.want)
		}
	}
}

package engine

import (
	"time"

	"github.com/muster-run/muster"
)

// What an integration batch takes, how a red batch is bisected and how
// the window adapts: pure rules the driver's integration queue
// (driver/integrate.go) follows.

// BatchCandidate is a task commit waiting in the integration queue.
type BatchCandidate struct {
	Task muster.TaskID
	// Owns is the task's Owns (normalised); empty: it may touch anything.
	Owns []string
}

// SelectBatch returns the indices, in queue order, of the waiting
// candidates one batch takes: the first always (no starvation); then, up
// to window in all, each later one that has Owns overlapping none taken
// (overlap says whether two Owns lists can name one path). A candidate
// without Owns is batched with nothing: it goes alone when it is first,
// and is left for a later batch otherwise. Candidates left out keep their
// place at the front of the queue.
func SelectBatch(waiting []BatchCandidate, window int, overlap func(a, b []string) bool) []int {
	if len(waiting) == 0 {
		return nil
	}
	take := []int{0}
	if len(waiting[0].Owns) == 0 {
		return take
	}
	for i := 1; i < len(waiting) && len(take) < window; i++ {
		c := waiting[i]
		if len(c.Owns) == 0 {
			continue
		}
		clash := false
		for _, j := range take {
			if overlap(waiting[j].Owns, c.Owns) {
				clash = true
				break
			}
		}
		if !clash {
			take = append(take, i)
		}
	}
	return take
}

// NextWindow is the batch window after a batch of size n: one more
// after a green batch (up to limit), half (at least 1) after a red one.
func NextWindow(window, limit int, green bool) int {
	if green {
		window++
	} else {
		window /= 2
	}
	return max(1, min(window, limit))
}

// GrowShare is the share (percent) of the plan-wide gates' expected time,
// counted from a batch's first gate run, during which the batch still
// grows: a commit that arrives then, and that the batch would take, cuts
// the run short and the batch is formed again with it (Grow).
const GrowShare = 10

// Grow reports whether a batch whose first gate run started elapsed ago,
// on gates expected to take expected (0: unknown), is young enough to be
// cut short and formed again with the commits that arrived since. The
// gate time cut runs cost a batch is therefore at most GrowShare percent
// of one run.
func Grow(elapsed, expected time.Duration) bool {
	return expected > 0 && elapsed >= 0 && elapsed*100 < expected*GrowShare
}

// Bisection searches a red batch's chain for its culprit. Prefix k of
// the chain is the tip with the batch's first k commits merged on it;
// prefix Lo is known to pass (0, the tip, or a fast-forward whose tree
// the task's own gates checked) and prefix Hi (the top) to fail. Each
// step gates the middle prefix and keeps the half whose ends differ, so
// that the culprit (the first commit whose prefix fails where the one
// before passed) is found within ⌈log₂ (Hi - Lo)⌉ steps.
type Bisection struct {
	Lo, Hi int
}

// Done reports whether the culprit is known: Hi.
func (b Bisection) Done() bool { return b.Hi-b.Lo <= 1 }

// Next is the prefix to gate next.
func (b Bisection) Next() int { return (b.Lo + b.Hi) / 2 }

// Record returns the search after prefix failed (or passed).
func (b Bisection) Record(prefix int, failed bool) Bisection {
	if prefix <= b.Lo || prefix >= b.Hi {
		return b
	}
	if failed {
		b.Hi = prefix
	} else {
		b.Lo = prefix
	}
	return b
}

// Culprit is the 1-based position in the chain of the commit to blame
// once Done: the commits before it land, it gets a fix round on the new
// tip, the ones after it go back to the front of the queue.
func (b Bisection) Culprit() int { return b.Hi }

// BisectSteps bounds the gate runs a bisection of n candidates takes:
// ⌈log₂ n⌉.
func BisectSteps(n int) int {
	s := 0
	for 1<<s < n {
		s++
	}
	return s
}

package engine_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-run/muster/engine"
)

// Who reviews (issue 25): a free reviewer of another executor always;
// the coder's own executor only once no other could come free within
// review_wait; never a wait past it when the coder's executor could
// review; and without a reviewer only a caller that does not wait.
func TestPropertyChooseReviewer(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		otherFree := rapid.Bool().Draw(t, "otherFree")
		othersReview := otherFree || rapid.Bool().Draw(t, "othersReview")
		selfReviews := rapid.Bool().Draw(t, "selfReviews")
		patient := rapid.Bool().Draw(t, "patient")
		wait := time.Duration(rapid.Int64Range(0, int64(10*time.Second)).Draw(t, "wait"))
		waited := time.Duration(rapid.Int64Range(0, int64(20*time.Second)).Draw(t, "waited"))
		c := engine.ChooseReviewer(otherFree, othersReview, selfReviews, patient, waited, wait)
		switch {
		case otherFree && c != engine.ReviewOther:
			t.Fatalf("another executor's reviewer is free, chose %d", c)
		case !otherFree && c == engine.ReviewOther:
			t.Fatalf("chose another executor's reviewer, none free")
		case c == engine.ReviewSelf && !selfReviews:
			t.Fatalf("the coder's executor does not review")
		case c == engine.ReviewSelf && othersReview && waited < wait:
			t.Fatalf("reviewed its own change %v into a wait of %v for another executor's reviewer", waited, wait)
		case c == engine.ReviewWait && selfReviews && (waited >= wait || !othersReview):
			t.Fatalf("waited (%v of %v, others review: %v) while its own executor could review", waited, wait, othersReview)
		case c == engine.ReviewNone && (patient || (selfReviews && !otherFree) || (othersReview && waited < wait)):
			t.Fatalf("went without a reviewer (patient %v, self %v, waited %v of %v)", patient, selfReviews, waited, wait)
		}
	})
}

// The case of issue 25: the coder's executor reviews, another executor's
// reviewer is busy: wait within review_wait, then review itself.
func TestChooseReviewerWaitsForAnotherExecutor(t *testing.T) {
	wait := 5 * time.Second
	if c := engine.ChooseReviewer(false, true, true, true, 100*time.Millisecond, wait); c != engine.ReviewWait {
		t.Errorf("0.1 s in: %d, want wait", c)
	}
	if c := engine.ChooseReviewer(true, true, true, true, 200*time.Millisecond, wait); c != engine.ReviewOther {
		t.Errorf("another came free: %d, want it", c)
	}
	if c := engine.ChooseReviewer(false, true, true, true, wait, wait); c != engine.ReviewSelf {
		t.Errorf("after the wait: %d, want its own clone", c)
	}
	if c := engine.ChooseReviewer(false, false, true, false, 0, wait); c != engine.ReviewSelf {
		t.Errorf("no other executor reviews: %d, want its own clone at once", c)
	}
}

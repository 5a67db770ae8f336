package engine

import "time"

// ReviewerChoice is what a worker does when its change needs a reviewer
// (driver/review.go asks ChooseReviewer each time it looks).
type ReviewerChoice int

const (
	// ReviewOther takes the free reviewer clone of another executor.
	ReviewOther ReviewerChoice = iota
	// ReviewWait waits for a reviewer clone to come free, then asks again.
	ReviewWait
	// ReviewSelf has the coder's own clone (idle while its change is
	// reviewed) review: its executor reviews, and no other executor's
	// reviewer came free within the wait.
	ReviewSelf
	// ReviewNone goes without this reviewer (a second reviewer, which
	// does not wait, when none is free).
	ReviewNone
)

// ChooseReviewer decides who reviews a change: a reviewer of another
// executor when one is free; else, when another executor has reviewers,
// it waits for one up to wait ([run] review_wait) before the coder's own
// executor reviews its change (a clone reviewed its own change while
// another reviewer came free 0.1 s later: issue 25); the coder's own
// clone at once when no other executor reviews. A patient caller (the
// first reviewer) waits as long as it takes when nothing else can
// review; an impatient one goes without. waited is how long the worker
// has looked so far. Pure: the driver gives the time as data.
func ChooseReviewer(otherFree, othersReview, selfReviews, patient bool, waited, wait time.Duration) ReviewerChoice {
	switch {
	case otherFree:
		return ReviewOther
	case selfReviews && (!othersReview || waited >= wait):
		return ReviewSelf
	case othersReview && waited < wait, patient:
		return ReviewWait
	}
	return ReviewNone
}

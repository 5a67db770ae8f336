package muster

// The string policies of muster.toml's [run] table, each a type with its
// valid values in one list, in the order of the documentation: the config
// reader accepts exactly the values of the list and names them when a
// value is not one of them (NetworkPolicy and NetworkPolicies are the
// network's, in network.go).

// OnFailurePolicy is [run] on_failure: what a run does once a task fails
// for good.
type OnFailurePolicy string

// On-failure policies.
const (
	OnFailureStop     OnFailurePolicy = "stop"     // start no new task; finish the running ones
	OnFailureContinue OnFailurePolicy = "continue" // run what does not depend on the failed task
)

// OnFailurePolicies lists the valid values of [run] on_failure.
var OnFailurePolicies = []OnFailurePolicy{OnFailureStop, OnFailureContinue}

// OnViolationPolicy is [run] on_violation: what happens to an attempt's
// change that leaves its task's bounds, once its fix round is spent.
type OnViolationPolicy string

// On-violation policies.
const (
	OnViolationFail    OnViolationPolicy = "fail"    // the attempt fails
	OnViolationDiscard OnViolationPolicy = "discard" // the out-of-bounds files are dropped, the rest kept
)

// OnViolationPolicies lists the valid values of [run] on_violation.
var OnViolationPolicies = []OnViolationPolicy{OnViolationFail, OnViolationDiscard}

// NoopPolicy is [run] noop: what an attempt that changes nothing means.
type NoopPolicy string

// No-op policies.
const (
	NoopFail     NoopPolicy = "fail"     // a failed attempt (unless the task's Satisfies says otherwise)
	NoopComplete NoopPolicy = "complete" // the task is done
)

// NoopPolicies lists the valid values of [run] noop.
var NoopPolicies = []NoopPolicy{NoopFail, NoopComplete}

// ReviewPartialPolicy is [run] review_partial: whether a review whose
// prompt could not hold the whole diff may approve.
type ReviewPartialPolicy string

// Review-partial policies.
const (
	ReviewPartialRefuse ReviewPartialPolicy = "refuse" // a review that saw part of the change is no approval (the default)
	ReviewPartialAllow  ReviewPartialPolicy = "allow"  // ... or it is
)

// ReviewPartialPolicies lists the valid values of [run] review_partial.
var ReviewPartialPolicies = []ReviewPartialPolicy{ReviewPartialRefuse, ReviewPartialAllow}

// GuardPolicy is [run] guard: what muster does when the user's repository
// changes during an attempt (refs, config, hooks...).
type GuardPolicy string

// Guard policies.
const (
	GuardRestore GuardPolicy = "restore" // detect, fail the attempt, undo what can be undone
	GuardDetect  GuardPolicy = "detect"  // detect and fail the attempt, undo nothing
	GuardOff     GuardPolicy = "off"     // no guard
)

// GuardPolicies lists the valid values of [run] guard.
var GuardPolicies = []GuardPolicy{GuardRestore, GuardDetect, GuardOff}

// ConfineMode is [run] confine: whether agents and gates run confined.
type ConfineMode string

// Confine modes.
const (
	ConfineAuto     ConfineMode = "auto"     // confine where the kernel can; say so once where it cannot
	ConfineRequired ConfineMode = "required" // refuse to run where the kernel cannot confine (exit 3)
	ConfineOff      ConfineMode = "off"      // never confine
)

// ConfineModes lists the valid values of [run] confine.
var ConfineModes = []ConfineMode{ConfineAuto, ConfineRequired, ConfineOff}

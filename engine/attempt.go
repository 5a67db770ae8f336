package engine

import "fmt"

// Attempt is the pure state machine of one attempt's rounds, as State is
// the run's: the driver's worker does the I/O (runs the agent, computes
// the change, runs the gates and the reviewers) and tells the machine what
// each check found; the machine says what comes next. It holds what the
// rounds carry from one to the next: whether the boundary and the
// empty-change rounds were already granted, and the last diff (a round
// that changes nothing is a stalemate).
//
// A round runs its checks in order: boundaries (Violation), an empty
// change (Empty), the diff (Diff), gates (Gates), review (Review); the
// first that does not say Go decides the round. A round whose checks all
// pass commits.
type Attempt struct {
	start, maxRounds int
	round            int
	violated         bool // the one boundary fix round was granted
	askedEmpty       bool // the one empty-change round was granted
	lastDiff         string
	why              string // the reason of the next fix round
}

// StepKind is what an attempt does next.
type StepKind int

// Steps.
const (
	// StepGo: the check passed; go on to the next one.
	StepGo StepKind = iota
	// StepFix: another round, its feedback for the reason in Reason.
	StepFix
	// StepRevert: put the out-of-bounds paths back and go on with what
	// is left of the change (on_violation = "discard").
	StepRevert
	// StepFail: the attempt fails with Reason; Retry says another
	// attempt may succeed.
	StepFail
	// StepSucceed: the task is done without a commit, for Reason.
	StepSucceed
)

// Step is the machine's answer to one check.
type Step struct {
	Kind   StepKind
	Reason string
	Retry  bool
}

// NewAttempt starts the rounds of an attempt at round start (0, or the
// round after an integration failure) with at most maxRounds fix rounds.
func NewAttempt(start, maxRounds int) *Attempt {
	return &Attempt{start: start, maxRounds: maxRounds, round: start - 1}
}

// Next starts the next round; it returns false when no round is left, and
// then Exhausted is the attempt's end. The first round's reason is why,
// the feedback the attempt started with (an integration conflict, say).
func (a *Attempt) Next(why string) (round int, ok bool) {
	if a.round < a.start {
		a.why = why
	}
	a.round++
	return a.round, a.round <= a.maxRounds
}

// Why is the reason of the round under way (empty for a first pass).
func (a *Attempt) Why() string { return a.why }

// canFix reports whether a fix round is left after this one.
func (a *Attempt) canFix() bool { return a.round < a.maxRounds }

func (a *Attempt) fix(why string) Step {
	a.why = why
	return Step{Kind: StepFix, Reason: why}
}

// Violation: the change touches paths it may not (what, for the reason).
// The first time, while rounds are left, it earns a fix round; after
// that, the paths are reverted and the attempt fails, unless discard says
// to go on without them.
func (a *Attempt) Violation(what string, discard bool) Step {
	if !a.violated && a.canFix() {
		a.violated = true
		return a.fix(what)
	}
	if discard {
		return Step{Kind: StepRevert, Reason: what}
	}
	return Step{Kind: StepFail, Reason: "boundary violation: " + what}
}

// Empty describes a round that changed nothing.
type Empty struct {
	// Delegated: the task planned new tasks (its product), ReadOnly: it
	// has read authority (no change is expected), Satisfied: the agent
	// said the task already holds.
	Delegated, ReadOnly, Satisfied bool
	// Answer is the agent's last message, for the reason (bounded).
	Answer string
	// NoopComplete is the config's noop = "complete".
	NoopComplete bool
	// Retries says whether the task has attempts left.
	Retries bool
}

// EmptyChange: the round changed nothing. A coder that did not say the
// task holds is asked once whether it does (a fix round); then the
// config's noop decides.
func (a *Attempt) EmptyChange(e Empty) Step {
	switch {
	case e.Delegated:
		return Step{Kind: StepSucceed, Reason: "delegated: planned new tasks, no change of its own"}
	case e.ReadOnly:
		return Step{Kind: StepSucceed, Reason: "read authority: no change, as expected"}
	case e.Satisfied && a.askedEmpty:
		return Step{Kind: StepSucceed, Reason: "satisfied when asked: " + e.Answer}
	case e.Satisfied:
		return Step{Kind: StepSucceed, Reason: "satisfied: no change needed"}
	case !a.askedEmpty && a.canFix():
		a.askedEmpty = true
		return a.fix("empty change: asked whether the task already holds")
	case e.NoopComplete:
		return Step{Kind: StepSucceed, Reason: "no change (noop = complete)"}
	}
	return Step{Kind: StepFail, Reason: "no change: the agent changed nothing and did not say the task already holds", Retry: e.Retries}
}

// AskedEmpty reports whether the empty-change round was granted (the
// worker warns with the agent's answer when it still changed nothing).
func (a *Attempt) AskedEmpty() bool { return a.askedEmpty }

// Diff: the round's change has this digest. A fix round that leaves the
// change as the round before it did is a stalemate.
func (a *Attempt) Diff(sum string) Step {
	if a.round > a.start && sum == a.lastDiff {
		// The reason names the check that kept failing (a gate, down to
		// its failing test; a finding), not only the stalemate.
		return Step{Kind: StepFail, Reason: fmt.Sprintf("stalemate: fix round %d changed nothing", a.round) + stillFailing(a.why)}
	}
	a.lastDiff = sum
	return Step{Kind: StepGo}
}

// Gates: failed is "" when the gates passed, else why they failed; a
// failure earns a fix round while one is left.
func (a *Attempt) Gates(failed string) Step {
	switch {
	case failed == "":
		return Step{Kind: StepGo}
	case a.canFix():
		return a.fix(failed)
	}
	return Step{Kind: StepFail, Reason: failed}
}

// Review: failed is "" when the reviewers approved; stop says no fix
// round can help (a critical finding, a stalemate between reviewer and
// coder).
func (a *Attempt) Review(failed string, stop bool) Step {
	switch {
	case failed == "":
		return Step{Kind: StepGo}
	case a.canFix() && !stop:
		return a.fix(failed)
	}
	return Step{Kind: StepFail, Reason: failed}
}

// Exhausted is the end of an attempt that used up its rounds.
func (a *Attempt) Exhausted() Step {
	return Step{Kind: StepFail, Reason: fmt.Sprintf("still failing after %d fix rounds", a.maxRounds) + stillFailing(a.why)}
}

// stillFailing is the tail of a reason that names the last check that
// failed ("" when there is none).
func stillFailing(why string) string {
	if why == "" {
		return ""
	}
	return "; still failing: " + why
}

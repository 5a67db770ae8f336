package muster

import "testing"

func TestFormatUSD(t *testing.T) {
	t.Parallel()
	for micros, want := range map[int64]string{
		0: "$0.00", 1: "$0.0000", 49: "$0.0000", 50: "$0.0001", 4_200: "$0.0042", 9_999: "$0.0100",
		10_000: "$0.01", 14_999: "$0.01", 15_000: "$0.02", 420_000: "$0.42", 1_000_000: "$1.00",
		1_234_560_000: "$1,234.56", -420_000: "-$0.42", -4_200: "-$0.0042",
		9_223_372_036_854_775_807:  "$9,223,372,036,854.78",
		-9_223_372_036_854_775_808: "-$9,223,372,036,854.78",
	} {
		if got := FormatUSD(micros); got != want {
			t.Errorf("FormatUSD(%d) = %q, want %q", micros, got, want)
		}
	}
}

func TestGroup(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := Group(n); got != want {
			t.Errorf("Group(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFormatUSDPrecise(t *testing.T) {
	t.Parallel()
	for micros, want := range map[int64]string{0: "$0.0000", 11_000: "$0.0110", 49: "$0.0000", 50: "$0.0001",
		1_234_560_000: "$1,234.5600", -11_000: "-$0.0110"} {
		if got := FormatUSDPrecise(micros); got != want {
			t.Errorf("FormatUSDPrecise(%d) = %q, want %q", micros, got, want)
		}
	}
}

// TestUnchargedFieldAndOldJournals: a gate failure is not charged when
// its NotCharged field says so, or, in a journal written before the
// field, when its reason starts "pre-existing"; a pass never is.
func TestUnchargedFieldAndOldJournals(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, c := range []struct {
		e    Event
		want bool
	}{
		{Event{Type: EvGateRan, Passed: &no, NotCharged: true, Reason: "fails on the base commit too"}, true},
		{Event{Type: EvGateRan, Passed: &no, Reason: ReasonPreExisting + ": fails on the base commit too; not charged"}, true},
		{Event{Type: EvGateRan, Passed: &no, Reason: "newly failing: t1"}, false},
		{Event{Type: EvGateRan, Passed: &yes, NotCharged: true}, false},
		{Event{Type: EvTaskFailed, NotCharged: true}, false},
	} {
		if got := c.e.Uncharged(); got != c.want {
			t.Errorf("%+v: uncharged %v, want %v", c.e, got, c.want)
		}
	}
}

func TestCancelCauseOfOldJournals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    Event
		want CancelCause
	}{
		{Event{Reason: "budget: the run spent $1.00 of $1.00"}, CauseBudget},
		{Event{Reason: "interrupted"}, CauseInterrupted},
		{Event{Reason: "run stopped: task a failed"}, CauseStopped},
		{Event{Reason: "budget: looks like one", Cause: CauseStopped}, CauseStopped},
	} {
		if got := c.e.CancelCause(); got != c.want {
			t.Errorf("%+v: cause %q, want %q", c.e, got, c.want)
		}
	}
}

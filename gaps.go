package muster

import "time"

// Gap is a stretch of a run's time when no muster process ran it: from
// the last event the stopped process recorded (its RunInterrupted, or
// the last line before a crash) to the RunResumed of the process that
// took over. Durations that span a gap (wall time, an attempt cut short
// by the crash, cost per day) leave it out.
type Gap struct {
	From, To time.Time
}

// GapTracker finds gaps in events fed in journal order.
type GapTracker struct {
	Gaps []Gap
	// cur is the time of the latest event, prev the latest time before
	// it: a resume's recovery events share its RunResumed's time (one
	// journal batch), so the gap starts at prev.
	cur, prev time.Time
}

// Add feeds one event.
func (g *GapTracker) Add(e *Event) {
	if e.Time.IsZero() {
		return
	}
	if !e.Time.Equal(g.cur) {
		g.prev, g.cur = g.cur, e.Time
	}
	if e.Type == EvRunResumed && !g.prev.IsZero() && g.cur.After(g.prev) {
		g.Gaps = append(g.Gaps, Gap{From: g.prev, To: g.cur})
	}
}

// Gaps returns the gaps of a run's events.
func Gaps(events []Event) []Gap {
	var g GapTracker
	for i := range events {
		g.Add(&events[i])
	}
	return g.Gaps
}

// Active returns how much of [from, to] lies outside the gaps.
func Active(gaps []Gap, from, to time.Time) time.Duration {
	if from.IsZero() || to.IsZero() || !to.After(from) {
		return 0
	}
	d := to.Sub(from)
	for _, g := range gaps {
		s, e := g.From, g.To
		if s.Before(from) {
			s = from
		}
		if e.After(to) {
			e = to
		}
		if e.After(s) {
			d -= e.Sub(s)
		}
	}
	return d
}

package muster

import (
	"testing"
	"time"
)

func TestGapsAndActive(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	evs := []Event{
		{Type: EvRunStarted, Time: at(0)},
		{Type: EvTaskStarted, Time: at(1)},
		{Type: EvMessage, Time: at(30)}, // then kill -9
		// The resume's batch: the cancelled attempt and RunResumed, one time.
		{Type: EvTaskCancelled, Time: at(100)},
		{Type: EvExecutorRelease, Time: at(100)},
		{Type: EvRunResumed, Time: at(100)},
		{Type: EvTaskStarted, Time: at(101)},
		{Type: EvRunInterrupted, Time: at(120)},
		{Type: EvRunResumed, Time: at(200)},
		{Type: EvRunFinished, Time: at(210)},
	}
	gaps := Gaps(evs)
	if len(gaps) != 2 || !gaps[0].From.Equal(at(30)) || !gaps[0].To.Equal(at(100)) || !gaps[1].From.Equal(at(120)) || !gaps[1].To.Equal(at(200)) {
		t.Fatalf("gaps %+v", gaps)
	}
	if got := Active(gaps, at(0), at(210)); got != 60*time.Second {
		t.Errorf("active %s, want 1m0s (210 s less 70 and 80 s of gaps)", got)
	}
	// The attempt the crash cut short: started at 1, cancelled at 100.
	if got := Active(gaps, at(1), at(100)); got != 29*time.Second {
		t.Errorf("the cut attempt: %s, want 29s", got)
	}
	if got := Active(nil, at(5), at(1)); got != 0 {
		t.Errorf("backwards: %s", got)
	}
}

package report

import (
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// Waits run from each Committed to the gate run that covered the commit
// (its verifying phase, its batch's included) or, without one, to the
// move over it (a batch's Integrating names the chain).
func TestIntegrationWaits(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	events := []muster.Event{
		{Type: muster.EvRunStarted, Run: "r", Time: at(0)},
		{Type: muster.EvCommitted, Task: "a", Time: at(1)},
		{Type: muster.EvIntegrating, Task: "a", Commit: "ca", Time: at(1.5)}, // a fast-forward
		{Type: muster.EvCommitted, Task: "b", Time: at(2)},
		{Type: muster.EvCommitted, Task: "c", Time: at(3)},
		{Type: muster.EvPhase, Phase: "verifying", Task: "b", Time: at(5)},
		{Type: muster.EvPhase, Phase: "verifying", Task: "c", Time: at(5)},
		{Type: muster.EvIntegrating, Task: "b", Commit: "mc", Time: at(6), Chain: []muster.ChainLink{{Task: "b", Commit: "mb"}, {Task: "c", Commit: "mc"}}},
		{Type: muster.EvCommitted, Task: "d", Time: at(7)},
		{Type: muster.EvIntegrating, Task: "x", Commit: "m", Time: at(11), Chain: []muster.ChainLink{{Task: "x"}, {Task: "d", Commit: "md"}}},
	}
	r := Build([][]muster.Event{events}, Options{})
	want := map[muster.TaskID]float64{"a": 0.5, "b": 3, "c": 2, "d": 4}
	if len(r.IntegrationWaits) != len(want) {
		t.Fatalf("waits %+v", r.IntegrationWaits)
	}
	for _, w := range r.IntegrationWaits {
		if w.Run != "r" || w.Seconds != want[w.Task] {
			t.Errorf("%s waited %v, want %v", w.Task, w.Seconds, want[w.Task])
		}
	}
	if r.IntegrationWaitP50 != 2 || r.IntegrationWaitP95 != 4 {
		t.Errorf("p50 %v p95 %v, want 2 and 4", r.IntegrationWaitP50, r.IntegrationWaitP95)
	}
}

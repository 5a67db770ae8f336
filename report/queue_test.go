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

// A gate run that gave no verdict on a commit does not end its wait: a
// batch cut short and formed again (a second verifying), or a commit
// sent back unchanged after a bisection, waits to the start of the last
// gate run before its verdict; a culprit's wait ends at the run that
// found it red (its fix round commits anew), and a wait with no verdict
// in the journal at its last gate run.
func TestIntegrationWaitsRunToTheLastGateRun(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	verifying := func(id muster.TaskID, s float64) muster.Event {
		return muster.Event{Type: muster.EvPhase, Phase: "verifying", Task: id, Time: at(s)}
	}
	events := []muster.Event{
		{Type: muster.EvRunStarted, Run: "r", Time: at(0)},
		{Type: muster.EvCommitted, Task: "e", Time: at(1)},
		verifying("e", 2), // cut short
		verifying("e", 2.5),
		{Type: muster.EvIntegrating, Task: "e", Commit: "me", Time: at(3.5), Chain: []muster.ChainLink{{Task: "e", Commit: "me"}}},
		{Type: muster.EvCommitted, Task: "f", Time: at(10)},
		{Type: muster.EvCommitted, Task: "g", Time: at(10)},
		verifying("f", 11), verifying("g", 11), // red: f is the culprit
		verifying("g", 13),
		{Type: muster.EvIntegrating, Task: "g", Commit: "mg", Time: at(14), Chain: []muster.ChainLink{{Task: "g", Commit: "mg"}}},
		{Type: muster.EvCommitted, Task: "f", Time: at(20)}, // its fix round
		{Type: muster.EvIntegrating, Task: "f", Commit: "cf", Time: at(20.5)},
		{Type: muster.EvCommitted, Task: "h", Time: at(30)},
		verifying("h", 32), // the run ends with no verdict
	}
	r := Build([][]muster.Event{events}, Options{})
	want := map[string]float64{"e": 1.5, "f": 1, "g": 3, "f2": 0.5, "h": 2}
	got := map[string]float64{}
	for _, w := range r.IntegrationWaits {
		k := string(w.Task)
		if _, dup := got[k]; dup {
			k += "2"
		}
		got[k] = w.Seconds
	}
	if len(got) != len(want) {
		t.Fatalf("waits %+v, want %v", r.IntegrationWaits, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s waited %v, want %v", k, got[k], v)
		}
	}
}

package engine_test

import (
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
)

func TestRetryBackoffGrowsWithJitterWithinBounds(t *testing.T) {
	if d := engine.RetryBackoff("r", "a", 0); d != 0 {
		t.Fatalf("no charged failure: %v", d)
	}
	for n := 1; n <= 12; n++ {
		full := engine.RetryBase << (n - 1)
		if full > engine.RetryMax || full <= 0 {
			full = engine.RetryMax
		}
		d := engine.RetryBackoff("r", "a", n)
		if d < full/2 || d > full {
			t.Errorf("after %d failures: %v, want within [%v, %v]", n, d, full/2, full)
		}
		if again := engine.RetryBackoff("r", "a", n); again != d {
			t.Errorf("not deterministic: %v then %v", d, again)
		}
	}
	// Jitter: tasks retried together do not wait alike.
	seen := map[time.Duration]bool{}
	for _, id := range []muster.TaskID{"a", "b", "c", "d", "e", "f"} {
		seen[engine.RetryBackoff("r", id, 3)] = true
	}
	if len(seen) < 4 {
		t.Errorf("jitter too small: %v", seen)
	}
}

// A retried task waits for its backoff: Decide starts nothing before it
// and says when to wake; the simulated run takes the waits into account.
func TestRetryWaitsForItsBackoff(t *testing.T) {
	p := plan("a")
	sim, _ := enginetest.New(p, enginetest.Crew(1), t0)
	sim.Script = func(id muster.TaskID, attempt int) enginetest.Outcome {
		return enginetest.Outcome{Duration: time.Second, Fail: attempt <= 3, Retry: true}
	}
	span, err := sim.Run()
	if err != nil {
		t.Fatal(err)
	}
	a := sim.State.Tasks["a"]
	if a.State != muster.StateSucceeded || a.Attempts != 4 {
		t.Fatalf("a %s after %d attempts", a.State, a.Attempts)
	}
	wait := engine.RetryBackoff(sim.State.Run, "a", 1) + engine.RetryBackoff(sim.State.Run, "a", 2) + engine.RetryBackoff(sim.State.Run, "a", 3)
	if span != 4*time.Second+wait {
		t.Fatalf("makespan %v, want 4s of work and %v of backoff", span, wait)
	}
}

package engine_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/engine/enginetest"
)

// TestPropertyRateLimited: the pace after a rate limit keeps at least one
// agent, never more than were running, halves a fresh storm, honours the
// agent's retry-after, and rises by one a quiet period back to capacity.
func TestPropertyRateLimited(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		running := rapid.IntRange(0, 64).Draw(t, "running")
		retry := time.Duration(rapid.IntRange(0, 900).Draw(t, "retry")) * time.Second
		jitter := rapid.Float64Range(0, 0.999).Draw(t, "jitter")
		active := rapid.Bool().Draw(t, "active")
		prev := muster.Pace{Limit: rapid.IntRange(1, 32).Draw(t, "limit"), Hit: t0.Add(-time.Duration(rapid.IntRange(0, 600).Draw(t, "ago")) * time.Second),
			Hits: rapid.IntRange(1, 10).Draw(t, "hits")}
		prev.Until = prev.Hit.Add(time.Duration(rapid.IntRange(0, 300).Draw(t, "wait")) * time.Second)
		p := muster.RateLimited(prev, active, t0, running, retry, jitter)
		sameStorm := active && t0.Before(prev.Until)
		if p.Limit < 1 || (running > 0 && p.Limit > running && !sameStorm) {
			t.Fatalf("limit %d with %d running (prev %+v)", p.Limit, running, prev)
		}
		if retry > 0 && p.Until.Before(t0.Add(min(retry, 10*time.Minute))) {
			t.Fatalf("until %s before the retry-after %s", p.Until.Sub(t0), retry)
		}
		if !p.Until.After(t0) {
			t.Fatalf("no backoff: until %s", p.Until)
		}
		if !active && running >= 2 && p.Limit != running/2 {
			t.Fatalf("a fresh storm with %d running: limit %d", running, p.Limit)
		}
		if active && t0.Before(prev.Until) && p.Limit != prev.Limit {
			t.Fatalf("a second failure of the same storm changed the limit %d -> %d", prev.Limit, p.Limit)
		}
		last := p.LimitAt(t0)
		for k := 1; k <= 10; k++ {
			at := t0.Add(time.Duration(k) * muster.PaceQuiet)
			if got := p.LimitAt(at); got != p.Limit+k || got < last {
				t.Fatalf("limit after %d quiet periods: %d (from %d)", k, got, p.Limit)
			}
			last = p.LimitAt(at)
		}
		if j := muster.Jitter("cred", int64(running)); j < 0 || j >= 1 || j != muster.Jitter("cred", int64(running)) {
			t.Fatalf("jitter %v", j)
		}
	})
}

// TestPropertyPaceHoldsTheCrew: under random rate-limit storms on shared
// credentials, no agent starts on a credential before its backoff ends,
// none past its adaptive limit, every task still succeeds, and no
// rate-limited attempt is charged.
func TestPropertyPaceHoldsTheCrew(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "tasks")
		var specs []string
		for i := range n {
			specs = append(specs, string(rune('a'+i)))
		}
		p := plan(specs...)
		cfg := enginetest.Crew(rapid.IntRange(1, 4).Draw(t, "c1"), rapid.IntRange(1, 4).Draw(t, "c2"), rapid.IntRange(1, 4).Draw(t, "c3"))
		cfg.Executors[0].APIKeyEnv = "KEY_A"
		cfg.Executors[1].APIKeyEnv = "KEY_A" // shares e1's credential
		cfg.Executors[2].APIKeyEnv = "KEY_B"
		limited := map[muster.TaskID]int{}
		for _, task := range p.Tasks {
			limited[task.ID] = rapid.IntRange(0, 4).Draw(t, "limited")
		}
		retry := time.Duration(rapid.IntRange(0, 5).Draw(t, "retry")) * time.Second
		sim, err := enginetest.New(p, cfg, t0)
		if err != nil {
			t.Fatal(err)
		}
		sim.Script = func(id muster.TaskID, attempt int) enginetest.Outcome {
			return enginetest.Outcome{Duration: time.Duration(attempt) * time.Second, RateLimited: attempt <= limited[id], RetryAfter: retry}
		}
		sim.OnApply = func(s *engine.State, e *muster.Event) {
			if e.Type != muster.EvExecutorLeased {
				return
			}
			cred := s.Config.Executor(e.Executor).Credential()
			pace, ok := s.Paces[cred]
			if !ok {
				return
			}
			if e.Time.Before(pace.Until) {
				t.Fatalf("%s started on %s %s before its backoff ends", e.Task, e.Executor, pace.Until.Sub(e.Time))
			}
			running := 0
			capacity := 0
			for _, x := range s.Config.Executors {
				if x.Credential() == cred {
					capacity += x.Clones
				}
			}
			for _, l := range s.Leases {
				if s.Config.Executor(l.Executor).Credential() == cred {
					running++
				}
			}
			if lim := pace.LimitAt(e.Time); lim < capacity && running > lim {
				t.Fatalf("%d agents on %s, its limit is %d", running, cred, lim)
			}
		}
		if _, err := sim.Run(); err != nil {
			t.Fatal(err)
		}
		for id, ts := range sim.State.Tasks {
			if ts.State != muster.StateSucceeded {
				t.Fatalf("task %s %s: %s", id, ts.State, ts.Reason)
			}
			if ts.Uncharged != limited[id] {
				t.Fatalf("task %s: %d uncharged attempts, %d rate limits", id, ts.Uncharged, limited[id])
			}
		}
	})
}

// TestRateLimitSlowsTheCrew: four agents at once, all rate limited: the
// credential drops to two, waits the retry-after, and climbs back.
func TestRateLimitSlowsTheCrew(t *testing.T) {
	p := plan("a", "b", "c", "d", "e", "f")
	sim, _ := enginetest.New(p, enginetest.Crew(4), t0)
	sim.Script = func(id muster.TaskID, attempt int) enginetest.Outcome {
		return enginetest.Outcome{Duration: time.Second, RateLimited: attempt == 1 && id <= "d", RetryAfter: 7 * time.Second}
	}
	maxAfter := 0
	var firstHit time.Time
	sim.OnApply = func(s *engine.State, e *muster.Event) {
		if e.Type == muster.EvRateLimited && firstHit.IsZero() {
			firstHit = e.Time
		}
		if e.Type == muster.EvExecutorLeased && !firstHit.IsZero() {
			if len(s.Leases) > maxAfter {
				maxAfter = len(s.Leases)
			}
			if e.Time.Before(firstHit.Add(7 * time.Second)) {
				t.Errorf("%s started %s after the rate limit, before its retry-after", e.Task, e.Time.Sub(firstHit))
			}
		}
	}
	if _, err := sim.Run(); err != nil {
		t.Fatal(err)
	}
	if maxAfter != 2 {
		t.Errorf("%d agents at once after the storm, want 2", maxAfter)
	}
	pace := sim.State.Paces["kind:sim"]
	if pace.Limit != 2 || pace.Hits != 1 {
		t.Errorf("pace %+v", pace)
	}
	for _, ts := range sim.State.Tasks {
		if ts.State != muster.StateSucceeded {
			t.Errorf("%s: %s", ts.Task.ID, ts.State)
		}
	}
}

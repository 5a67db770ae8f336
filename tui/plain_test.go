package tui

import (
	"testing"

	"github.com/muster-run/muster"
)

func TestPlainLineLoopsAndIntegrationGates(t *testing.T) {
	yes, no := true, false
	cases := map[string]muster.Event{
		"t: check 2 passed":                               {Type: muster.EvLoopAttempt, Task: "t", Round: 2, Passed: &yes},
		"t: check 1 failed":                               {Type: muster.EvLoopAttempt, Task: "t", Round: 1, Passed: &no},
		"t: loop exhausted after 3 checks: still red":     {Type: muster.EvLoopEnded, Task: "t", State: "exhausted", Round: 3, Reason: "still red"},
		"t: gate test failed on the integrated tree":      {Type: muster.EvGateRan, Task: "t", Gate: "test", Passed: &no, Phase: "integration"},
		"t: gate test failed (pre-existing, not charged)": {Type: muster.EvGateRan, Task: "t", Gate: "test", Passed: &no, Baseline: "fail", Reason: "pre-existing: fails on the base commit too; not charged"},
		"t: gate accept failed":                           {Type: muster.EvGateRan, Task: "t", Gate: "accept", Passed: &no, Baseline: "fail"},
	}
	for want, e := range cases {
		if got := PlainLine(e); got != want {
			t.Errorf("PlainLine(%s) = %q, want %q", e.Type, got, want)
		}
	}
}

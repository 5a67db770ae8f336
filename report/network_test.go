package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/report"
)

// The provider's usage counts and shows beside the agent's claim; a clone
// whose responses carried none says so; Blocked events are listed.
func TestProviderUsageBesideClaims(t *testing.T) {
	tok := func(task string, clone int, src, reason string, in int64) muster.Event {
		return muster.Event{Time: at(5), Type: muster.EvTokensUsed, Task: muster.TaskID(task), Executor: "claude", Clone: clone,
			Role: "coder", Model: "m", Source: src, Reason: reason, Usage: muster.Usage{InputTokens: in, CostMicros: in}}
	}
	evs := []muster.Event{
		{Time: at(0), Type: muster.EvRunStarted, Run: "r1", Schema: 1},
		tok("a", 1, muster.UsageProvider, "", 120),
		tok("a", 1, muster.UsageClaim, "", 100),
		tok("b", 2, muster.UsageProvider, muster.UsageUnavailable, 0),
		tok("b", 2, "", "", 70),
		{Time: at(6), Type: muster.EvBlocked, Task: "a", Attempt: 1, Executor: "claude", Clone: 1, Host: "127.0.0.1", Port: 4222, Reason: "loopback"},
		{Time: at(9), Type: muster.EvRunFinished, State: muster.RunSucceeded},
	}
	r := report.Build([][]muster.Event{evs}, report.Options{})
	if r.Totals.InputTokens != 190 {
		t.Fatalf("total input %d, want 190 (the provider's 120 and b's agent 70; the claim not counted)", r.Totals.InputTokens)
	}
	if len(r.Observed) != 2 || r.Observed[0].ProviderTokens != 120 || r.Observed[0].ClaimedTokens != 100 || !r.Observed[0].Available ||
		r.Observed[1].Available || r.Observed[1].ClaimedTokens != 70 {
		t.Fatalf("observed %+v", r.Observed)
	}
	if len(r.Blocked) != 1 || r.Blocked[0].Host != "127.0.0.1:4222" {
		t.Fatalf("blocked %+v", r.Blocked)
	}
	var b bytes.Buffer
	if err := report.WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Provider usage", "provider usage unavailable", "127.0.0.1:4222 (loopback)", "Network refused (1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
}

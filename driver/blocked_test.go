package driver_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/runview"
)

// Blocked records become Blocked events once per host and port per
// attempt, bounded, whatever an agent floods; a claim beside the
// provider's usage is journaled but never counted.
func TestBlockedRecordsAreBoundedAndClaimsUncounted(t *testing.T) {
	h := newHarness(t, plan("a"), crew(1))
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		for i := 0; i < 3; i++ {
			emit(muster.Record{Type: muster.RecBlocked, Host: "127.0.0.1", Port: 4222, Text: "loopback"})
		}
		for i := 0; i < 200; i++ {
			emit(muster.Record{Type: muster.RecBlocked, Host: fmt.Sprintf("h%d.example", i), Port: 443})
		}
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Source: muster.UsageProvider, Usage: muster.Usage{InputTokens: 10, CostMicros: 10}})
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Source: muster.UsageClaim, Usage: muster.Usage{InputTokens: 1, CostMicros: 1}})
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Source: "made-up", Usage: muster.Usage{InputTokens: 100, CostMicros: 100}})
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	if err != nil {
		t.Fatal(err)
	}
	if st.Usage.InputTokens != 110 {
		t.Fatalf("usage %+v: want the provider's and the unknown-source record counted, the claim not", st.Usage)
	}
	evs := h.j.Snapshot()
	var blocked []muster.Event
	for _, e := range evs {
		if e.Type == muster.EvBlocked {
			blocked = append(blocked, e)
		}
	}
	if len(blocked) != 50 {
		t.Fatalf("%d Blocked events, want 50 (the bound)", len(blocked))
	}
	first := blocked[0]
	if first.BlockedHost() != "127.0.0.1:4222" || first.Task != "a" || first.Attempt != 1 || first.Executor == "" || first.Reason != "loopback" {
		t.Fatalf("first Blocked event %+v", first)
	}
	if hosts := muster.BlockedIn(eventPtrs(evs), "a", 1); len(hosts) != 50 || hosts[0] != "127.0.0.1:4222" {
		t.Fatalf("BlockedIn: %v", hosts)
	}
	if r := runview.Fold(evs); len(r.Blocked) != 50 || r.Blocked[0].Host != "127.0.0.1:4222" {
		t.Fatalf("runview: %+v", r.Blocked)
	}
}

func eventPtrs(evs []muster.Event) []*muster.Event {
	out := make([]*muster.Event, len(evs))
	for i := range evs {
		out[i] = &evs[i]
	}
	return out
}

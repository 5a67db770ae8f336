package driver_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/muster-run/muster"
)

// A red top whose second look passes is flaky: a Warning says so and the
// commit lands with no fix round.
func TestFlakyIntegrationGateLandsOnTheSecondLook(t *testing.T) {
	cfg := crew(2)
	cfg.Gates = []muster.GateSpec{{Name: "flaky", Command: "x"}}
	h := newHarness(t, plan("a", "b"), cfg)
	var both sync.WaitGroup // both prepared on the same base
	both.Add(2)
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Round == 0 {
			both.Done()
			both.Wait()
		}
		return &muster.ExecResult{}, nil
	}
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) {
		// The queue's clone: red the first time on a tree, green after.
		return !strings.HasPrefix(dir, "/co/muster-queue@") || n > 1, "flaked"
	})
	st, err := h.run(t)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s", err, st.RunState)
	}
	var integration []muster.Event
	for _, g := range events(h, muster.EvGateRan) {
		if g.Phase == "integration" {
			integration = append(integration, g)
		}
	}
	if len(integration) != 2 || *integration[0].Passed || !*integration[1].Passed || integration[0].Commit != integration[1].Commit {
		t.Fatalf("integration runs %+v: want red then green on one tree", integration)
	}
	flaky := 0
	for _, w := range events(h, muster.EvWarning) {
		if strings.HasPrefix(w.Message, "flaky:") {
			flaky++
		}
	}
	if flaky != 1 || len(events(h, muster.EvFixRound)) != 0 {
		t.Fatalf("%d flaky warnings, fix rounds %+v", flaky, events(h, muster.EvFixRound))
	}
	if tip, _ := h.ws.Tip(context.Background()); tip != integration[0].Commit {
		t.Fatalf("tip %s, want the flaky tree %s", tip, integration[0].Commit)
	}
}

package driver_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/mock"
)

// TestExecutorJoinsMidRun: a fleet run whose task a names executor y,
// which the crew lacks, says what it waits for once nothing else runs;
// the executor and a reviewer that join then (Options.Joins) are
// journaled as ExecutorJoined and used: a runs on y and is reviewed by
// the reviewer that joined. A second join of a known name is ignored.
func TestExecutorJoinsMidRun(t *testing.T) {
	p := plan("a", "b")
	p.Task("a").Executor = "y"
	cfg := crew(1)
	cfg.Fleet.NATS = "nats://127.0.0.1:4222"
	h := newHarness(t, p, cfg)
	var onY, reviews atomic.Int32
	y := &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		onY.Add(1)
		return &muster.ExecResult{}, nil
	}}
	rv := &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		reviews.Add(1)
		return &muster.ExecResult{}, nil
	}}
	joins := make(chan driver.Joined, 3)
	h.opts.Joins = joins
	var waited string
	h.opts.OnEvent = func(e *muster.Event, _ *engine.State) {
		if e.Type == muster.EvWarning && waited == "" {
			waited = e.Message
			joins <- driver.Joined{Spec: &muster.ExecutorSpec{Name: "x", Clones: 4}, Worker: "w0", Exec: y}
			joins <- driver.Joined{Spec: &muster.ExecutorSpec{Name: "rv", Clones: 1, Roles: []muster.Role{muster.RoleReviewer}, Env: map[string]string{"K": "secret"}}, Worker: "w2", Exec: rv}
			joins <- driver.Joined{Spec: &muster.ExecutorSpec{Name: "y", Clones: 2}, Worker: "w1", Exec: y}
		}
	}
	st, err := h.run(t)
	if err != nil {
		t.Fatal(err)
	}
	if st.RunState != muster.RunSucceeded || st.Tasks["a"].Executor != "y" {
		t.Fatalf("run %s, a on %q", st.RunState, st.Tasks["a"].Executor)
	}
	if !strings.Contains(waited, "executor y") {
		t.Fatalf("the run said it waits for %q", waited)
	}
	if onY.Load() != 1 || reviews.Load() == 0 {
		t.Fatalf("%d attempts on y, %d reviews by rv", onY.Load(), reviews.Load())
	}
	var joined []string
	for _, e := range h.j.Snapshot() {
		if e.Type == muster.EvExecutorJoined {
			joined = append(joined, e.Executor+"@"+e.Worker)
			if e.Spec == nil || len(e.Spec.Env) > 0 || !e.Spec.Fleet {
				t.Errorf("journaled spec %+v", e.Spec)
			}
		}
	}
	if strings.Join(joined, " ") != "rv@w2 y@w1" {
		t.Fatalf("ExecutorJoined: %v", joined)
	}
}

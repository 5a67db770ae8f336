package egress_test

import (
	"context"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/mockllm"
)

// A fleet worker's job carries what is left of the run's budget: its
// agent's endpoint counts the job's own responses against it and answers
// 429 once they spend it (attack: an agent that keeps asking, each answer
// 55 tokens, or a priced 60 micro-dollars).
func TestExecutorJobBudgetLeft(t *testing.T) {
	m := mock(t, &mockllm.Script{Scenarios: []mockllm.Scenario{
		{Name: "default", Steps: []mockllm.Step{{Text: "ok", Usage: &mockllm.Usage{InputTokens: 50, OutputTokens: 5}}}},
	}})
	t.Setenv("EGRESS_EXEC_KEY", realKey)
	spec := &muster.ExecutorSpec{Name: "c", Kind: muster.ExecCommand, BaseURL: m.URL + "/v1", APIKeyEnv: "EGRESS_EXEC_KEY"}
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{spec}}
	price := func(string, muster.Usage) (int64, bool) { return 60, true }
	run := func(left *muster.Budget) []int {
		var codes []int
		x := &egress.Executor{Config: cfg, Price: price, Inner: agentFunc(func(req *muster.ExecRequest, _ func(muster.Record)) error {
			for range 5 {
				codes = append(codes, callModel(t, req, "go on"))
			}
			return nil
		})}
		if _, err := x.Execute(context.Background(), &muster.ExecRequest{Spec: spec, BudgetLeft: left}, nil); err != nil {
			t.Fatal(err)
		}
		return codes
	}
	for _, c := range []struct {
		left *muster.Budget
		ok   int
	}{
		{&muster.Budget{Tokens: 120}, 3},    // 55, 110, 165: spent
		{&muster.Budget{USDMicros: 100}, 2}, // 60, 120: spent
		{nil, 5},                            // no budget
	} {
		before := len(m.Requests())
		codes := run(c.left)
		if got := len(m.Requests()) - before; got != c.ok {
			t.Errorf("budget left %+v: %d requests reached the provider (codes %v), want %d", c.left, got, codes, c.ok)
		}
		for i, code := range codes {
			if want := map[bool]int{true: 200, false: 429}[i < c.ok]; code != want {
				t.Errorf("budget left %+v: request %d answered %d, want %d (codes %v)", c.left, i+1, code, want, codes)
			}
		}
	}
}

// What the orchestrator sends with a job: the run's budget less what the
// journal counted; a spent part leaves 1, so the job still stops.
func TestLedgerLeft(t *testing.T) {
	if l := egress.NewLedger(muster.RunConfig{}); l.Left() != nil {
		t.Errorf("no budget: left %+v", l.Left())
	}
	l := egress.NewLedger(muster.RunConfig{BudgetUSDMicros: 1000, BudgetTokens: 100})
	l.Observe(muster.Usage{InputTokens: 40, CostMicros: 1200})
	if got := l.Left(); got == nil || *got != (muster.Budget{USDMicros: 1, Tokens: 60}) {
		t.Errorf("left %+v, want 1 micro-dollar and 60 tokens", got)
	}
}

package fleet

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/muster-run/muster"
)

// A job carries what was left of the run's budget when it was sent, and
// the worker hands it to the job's executor (its endpoint answers 429
// once the job spends it: egress); a job without it (a run with no
// budget, an orchestrator of an earlier version) has none.
func TestJobCarriesBudgetLeft(t *testing.T) {
	left := &muster.Budget{USDMicros: 1500, Tokens: 20}
	for _, c := range []struct {
		left func() *muster.Budget
		want *muster.Budget
	}{
		{func() *muster.Budget { return left }, left},
		{func() *muster.Budget { return nil }, nil},
		{nil, nil},
	} {
		r := &remote{d: &Dispatcher{budgetLeft: c.left}, name: "x"}
		job, err := r.job(context.Background(), &muster.ExecRequest{Task: &muster.Task{ID: "a"}, Role: muster.RoleCoder, Base: "s-a"}, "")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(job)
		var got Job
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		gl := got.budgetLeft()
		if (gl == nil) != (c.want == nil) || gl != nil && *gl != *c.want {
			t.Errorf("budget left %+v, want %+v (job %s)", gl, c.want, b)
		}
	}
	var old Job
	if err := json.Unmarshal([]byte(`{"run":"r","id":"j","task":{"id":"a"},"executor":"x","prompt":"p"}`), &old); err != nil || old.budgetLeft() != nil {
		t.Errorf("an earlier orchestrator's job: budget left %+v (%v)", old.budgetLeft(), err)
	}
}

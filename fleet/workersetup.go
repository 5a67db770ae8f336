package fleet

import (
	"context"
	"fmt"

	"github.com/muster-run/muster"
)

// setupClone runs the run's [setup] steps (Job.Setup) in the clone at
// dir, in order, with the worker's setup runner (its gates' when none):
// a worker's clone holds what a local clone holds when its agent starts
// and when its gates run. It returns the failed step's result (nil when
// every step passed or the job has none). A step always runs: a worker
// keeps no record of what setup left in its clones yet, so an output an
// agent touched is installed again before the gates.
func (w *Worker) setupClone(ctx context.Context, dir string, job *Job) (*muster.SetupStep, *muster.GateResult) {
	runner := w.o.Setup
	if runner == nil {
		runner = w.o.Gates
	}
	if runner == nil {
		return nil, nil
	}
	for i := range job.Setup {
		st := &job.Setup[i]
		r := runner.Run(ctx, dir, muster.GateSpec{Name: "setup " + st.Name, Command: st.Command}, job.GateTimeout)
		if !r.Passed {
			return st, &r
		}
	}
	return nil, nil
}

// setupReadOnly makes the job's setup outputs in its clone read-only to
// an agent that may write the clone, where the sandbox's namespaces
// exist: the local run's rule (muster.SetupOutputs, ARCHITECTURE §8.5).
func setupReadOnly(c *muster.Confinement, job *Job, dir string) *muster.Confinement {
	if c == nil || !c.Namespaces || job.Authority == muster.AuthorityRead {
		return c
	}
	return c.WithReadOnly(muster.SetupOutputs(job.Setup, dir)...)
}

// setupFailed is the gate results of a change after which setup failed
// in the clone: each gate fails, naming the step, as a local task's
// change that breaks setup fails.
func setupFailed(job *Job, st *muster.SetupStep, r *muster.GateResult) []muster.GateResult {
	out := make([]muster.GateResult, 0, len(job.Gates))
	for _, g := range job.Gates {
		out = append(out, muster.GateResult{Name: g.Name, Command: g.Command, ExitCode: r.ExitCode, Blocked: r.Blocked,
			Output: fmt.Sprintf("setup %s (%s) failed after the change (exit %d):\n%s", st.Name, st.Command, r.ExitCode, r.Output)})
	}
	return out
}

// gates sets the clone up again (what the agent's change touched) and
// runs the job's gates in it; a setup step that fails fails every gate.
func (w *Worker) gates(ctx context.Context, dir string, job *Job) []muster.GateResult {
	if len(job.Gates) == 0 {
		return []muster.GateResult{} // the orchestrator runs them ([fleet] trust_worker_gates off)
	}
	if st, r := w.setupClone(ctx, dir, job); st != nil {
		return setupFailed(job, st, r)
	}
	out := []muster.GateResult{}
	for _, g := range job.Gates {
		r := w.o.Gates.Run(ctx, dir, g, job.GateTimeout)
		if len(r.Output) > 64<<10 {
			r.Output = "…" + r.Output[len(r.Output)-64<<10:]
		}
		out = append(out, r)
	}
	return out
}

package fleet

// The executor a Dispatcher hands the crew for each executor the fleet
// serves: Execute sends the job and waits for its result.

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/muster-run/muster"
)

// Executor returns the adapter of an executor the fleet serves.
func (d *Dispatcher) Executor(spec *muster.ExecutorSpec) muster.Executor {
	return &remote{d: d, name: spec.Name}
}

type remote struct {
	d    *Dispatcher
	name string
}

var _ muster.Executor = (*remote)(nil)

// Execute sends one invocation to the fleet and waits for the result of
// the lease it accepts. A coder's result is applied to req.Dir, as if the
// agent had written it there; the gates it ran come back in the result.
// In a resumed run, a job of the interrupted one that does the same work
// is adopted instead of sent again (adopt.go).
func (r *remote) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	d := r.d
	dir := req.Dir // where the change is in git
	if req.Role == muster.RoleReviewer && req.Source != "" {
		dir = req.Source // Dir is an export without a repository
	}
	p, claim := d.adopt(req, r.name, dir)
	if p != nil {
		emit(claim)
	} else {
		if req.Task != nil {
			// The task's work is done anew: what of it an interrupted run
			// left on workers will never be taken.
			d.cancelOrphans(req.Task.ID)
		}
		job, err := r.job(ctx, req, dir)
		if err != nil {
			return nil, err
		}
		p = &pending{job: job, dir: dir, ch: make(chan Report, 1024), done: make(chan struct{}), seen: map[string]bool{}}
		d.mu.Lock()
		d.jobs[job.ID] = p
		d.mu.Unlock()
	}
	defer func() {
		d.mu.Lock()
		delete(d.jobs, p.job.ID)
		d.mu.Unlock()
		close(p.done)
		p.dropChunks()
		_ = os.Remove(d.jobFile(p.job.ID)) // ended: nothing to adopt
	}()
	if p.msgSeq == 0 {
		d.keep(p.job, 0)
		if err := d.publish(ctx, p); err != nil {
			return nil, err
		}
		p.lastSeen = time.Now()
	}
	return d.wait(ctx, req, p, emit)
}

// job makes the job of an invocation: the worktree's state as a commit
// (past a coder's first round), the prompt, and where it may not run.
func (r *remote) job(ctx context.Context, req *muster.ExecRequest, dir string) (*Job, error) {
	d := r.d
	start := req.Base
	if req.Role != muster.RoleCoder || req.Round != 0 || start == "" {
		// The worktree holds more than a commit (a fix round's state, a
		// change under review): record it as one.
		parent := req.Base
		if parent == "" {
			h, err := d.local.Head(ctx, dir)
			if err != nil {
				return nil, fmt.Errorf("fleet: %w", err)
			}
			parent = h
		}
		s, err := d.local.Snapshot(ctx, dir, parent)
		if err != nil {
			return nil, fmt.Errorf("fleet: snapshot the worktree: %w", err)
		}
		start = s
	}
	job := &Job{
		Run: d.run, ID: randomID(), Gen: d.gen, Repo: d.repo, Start: start,
		Task: req.Task, Executor: r.name, Role: req.Role, Attempt: req.Attempt, Round: req.Round,
		Authority: req.Authority, Model: req.Model, Prompt: req.Prompt, SessionID: req.SessionID,
		Timeout: req.Timeout, Grace: req.Grace, Stall: req.Stall, PlanOut: req.PlanOut != "", RunTTL: d.runTTL,
		Nonce: randomID() + randomID(),
	}
	if d.budgetLeft != nil {
		if b := d.budgetLeft(); b != nil {
			job.BudgetLeftUSDMicros, job.BudgetLeftTokens = b.USDMicros, b.Tokens
		}
	}
	if req.Role == muster.RoleCoder && d.trustGates {
		job.Gates, job.GateTimeout = req.Gates, req.GateTimeout
	}
	if req.Role == muster.RoleCoder && len(d.setup) > 0 {
		job.Setup, job.GateTimeout = d.setup, req.GateTimeout
	}
	if req.Role == muster.RoleReviewer {
		d.mu.Lock()
		if w := d.producer[req.Task.ID]; w != "" {
			job.NotOn = []string{w}
		}
		d.mu.Unlock()
		if len(job.NotOn) > 0 && !d.servedElsewhere(ctx, r.name, job.NotOn[0]) {
			return nil, &muster.AgentError{Class: muster.FailInvalid, Message: fmt.Sprintf("fleet: no worker but %s, which made the change, serves reviewer executor %s: a reviewer never runs where the change was made (add a worker, or a local reviewer)", job.NotOn[0], r.name)}
		}
	}
	if req.DiffFile != "" {
		b, err := os.ReadFile(req.DiffFile)
		if err != nil {
			return nil, fmt.Errorf("fleet: %w", err)
		}
		job.Diff = string(b)
	}
	return job, nil
}

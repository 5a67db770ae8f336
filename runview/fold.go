package runview

import (
	"slices"
	"time"

	"github.com/muster-run/muster"
)

// warn lists a warning once: a resume says again what the run's start
// said (the confinement, a key's scope), and a page that lists it three
// times reads as three problems.
func (r *Run) warn(msg string) {
	if !slices.Contains(r.Warnings, msg) {
		r.Warnings = append(r.Warnings, msg)
	}
}

// Apply folds one event into the run.
func (r *Run) Apply(e *muster.Event) {
	r.gaps.Add(e)
	r.foldRace(e)
	_ = r.applyRun(e) || r.applyClone(e) || r.applyTask(e)
}

// Active is the run's time from its start to now (or its end, once it
// ended) that a muster process ran it: the stretches between a stop and
// the resume (muster.Gap) do not count, as in reports.
func (r *Run) Active(now time.Time) time.Duration {
	end := now
	if !r.End.IsZero() {
		end = r.End
	}
	return muster.Active(r.gaps.Gaps, r.Start, end)
}

// applyRun folds an event of the run as a whole; false for others.
func (r *Run) applyRun(e *muster.Event) bool {
	switch e.Type {
	case muster.EvRunStarted:
		r.ID, r.Plan, r.Branch, r.Base, r.Start, r.Config = e.Run, e.Plan, e.Branch, e.Base, e.Time, e.Config
		if e.Config != nil {
			r.Budget = e.Config.Run.BudgetUSDMicros
			for _, x := range e.Config.Executors {
				for c := 1; c <= x.Clones; c++ {
					r.Clone(muster.Slot(x.Name, c))
				}
			}
		}
	case muster.EvRunResumed:
		r.State, r.End = "", time.Time{}
		if e.Config != nil && e.Config.Run.BudgetUSDMicros > 0 {
			r.Budget = e.Config.Run.BudgetUSDMicros
		}
	case muster.EvExecutorJoined:
		r.joined(e)
	case muster.EvWarning:
		r.warn(e.Message)
	case muster.EvRateLimited:
		r.rateLimited(e)
	case muster.EvBlocked:
		r.Blocked = append(r.Blocked, Blocked{Task: e.Task, Attempt: e.Attempt, Slot: e.Slot(), Host: e.BlockedHost(), Reason: e.Reason, Time: e.Time})
	case muster.EvRunFinished:
		r.State, r.End = e.State, e.Time
		r.idleAll()
	case muster.EvRunInterrupted:
		r.State, r.End = muster.RunInterrupted, e.Time
		r.idleAll()
	default:
		return false
	}
	return true
}

// applyClone folds an event of a clone (a lease, a worker, tokens);
// false for others.
func (r *Run) applyClone(e *muster.Event) bool {
	switch e.Type {
	case muster.EvExecutorLeased:
		if slot := e.Slot(); slot != "" {
			c := r.Clone(slot)
			c.Role, c.Task, c.Since, c.Work = e.Role, e.Task, e.Time, muster.Usage{}
		}
	case muster.EvExecutorRelease:
		if c := r.slots[e.Slot()]; c != nil {
			c.Task, c.Work, c.Worker = "", muster.Usage{}, ""
		}
	case muster.EvWorkerAssigned:
		where := e.Worker + "/" + muster.Slot(e.Executor, e.WorkerClone)
		if slot := e.Slot(); slot != "" {
			r.Clone(slot).Worker = where
		}
		if e.Role != muster.RoleReviewer && e.Task != "" {
			r.Task(e.Task).Worker = where
		}
	case muster.EvTokensUsed:
		if !e.Counted() {
			break // an agent's claim beside the provider's numbers
		}
		r.Usage.Add(e.Credited())
		if e.Task != "" {
			r.Task(e.Task).Usage.Add(e.Credited())
		}
		if slot := e.Slot(); slot != "" {
			c := r.Clone(slot)
			c.Total.Add(e.Credited())
			if c.Task == e.Task {
				c.Work.Add(e.Credited())
			}
		}
	default:
		return false
	}
	return true
}

// applyTask folds an event of one task's life; false for others.
func (r *Run) applyTask(e *muster.Event) bool {
	switch e.Type {
	case muster.EvTasksPlanned, muster.EvPlanAdopted: // an adopted version: the tasks it changes or adds
		for _, pt := range e.Tasks {
			t := r.Task(pt.ID)
			t.Title, t.After = pt.Title, pt.After
			if pt.Done {
				t.State = muster.StateSucceeded
			}
		}
	case muster.EvTaskStarted:
		t := r.Task(e.Task)
		t.State, t.Attempt, t.Phase, t.Round, t.Reason = muster.StateRunning, e.Attempt, "agent", 0, ""
		t.Worker = ""
		if t.Start.IsZero() {
			t.Start = e.Time
		}
		if slot := e.Slot(); slot != "" {
			t.Slot = slot
			c := r.Clone(slot)
			if c.Task != e.Task {
				c.Task, c.Since, c.Work, c.Worker = e.Task, e.Time, muster.Usage{}, ""
			}
			if c.Role == "" {
				c.Role = e.Role
			}
		}
	case muster.EvPhase:
		t := r.Task(e.Task)
		t.Phase, t.Round = e.Phase, e.Round
	case muster.EvFixRound:
		t := r.Task(e.Task)
		t.Round = e.Round
		t.FixRounds++
		t.Fixes = append(t.Fixes, FixRound{Round: e.Round, Reason: e.Reason, Time: e.Time})
	case muster.EvGateRan:
		t := r.Task(e.Task)
		t.Gates = append(t.Gates, GateRun{Name: e.Gate, Passed: e.Passed != nil && *e.Passed,
			Baseline: e.Baseline, NotCharged: e.Uncharged(), Time: e.Time, Output: e.Output})
	case muster.EvReviewed:
		t := r.Task(e.Task)
		t.Reviews = append(t.Reviews, Review{Slot: e.Slot(), Round: t.FixRounds, Time: e.Time, Findings: e.Findings})
	case muster.EvCommitted, muster.EvIntegrated:
		t := r.Task(e.Task)
		if e.Commit != "" {
			t.Commit = e.Commit
		}
		if len(e.Paths) > 0 {
			t.Paths = e.Paths
		}
	case muster.EvTaskSucceeded:
		r.end(e, muster.StateSucceeded)
		if e.Commit != "" {
			r.Task(e.Task).Commit = e.Commit
		}
	case muster.EvTaskFailed, muster.EvTaskSkipped, muster.EvTaskCancelled:
		r.end(e, EndState(e))
	case muster.EvTaskReopened:
		t := r.Task(e.Task)
		t.State, t.Reason = muster.StatePending, ""
	default:
		return false
	}
	return true
}

// EndState returns the state a task-ending event leaves the task in: a
// failure that will be retried leaves it pending. It returns "" for
// other events.
func EndState(e *muster.Event) muster.TaskState {
	switch e.Type {
	case muster.EvTaskSucceeded:
		return muster.StateSucceeded
	case muster.EvTaskFailed:
		if e.Retry {
			return muster.StatePending
		}
		return muster.StateFailed
	case muster.EvTaskSkipped:
		return muster.StateSkipped
	case muster.EvTaskCancelled:
		return muster.StateCancelled
	}
	return ""
}

// end records a task's end and frees the clones working on it.
func (r *Run) end(e *muster.Event, state muster.TaskState) {
	t := r.Task(e.Task)
	t.State, t.End, t.Reason, t.Phase = state, e.Time, e.Reason, ""
	for _, c := range r.Clones {
		if c.Task == e.Task {
			c.Task, c.Work = "", muster.Usage{}
		}
	}
}

func (r *Run) idleAll() {
	for _, c := range r.Clones {
		c.Task, c.Work = "", muster.Usage{}
	}
}

// joined folds an ExecutorJoined: the executor's clones get lanes, and
// the run's config (a copy: the RunStarted's may be shared) has it, as
// the engine's does.
func (r *Run) joined(e *muster.Event) {
	if e.Spec == nil || r.Config == nil || r.Config.Executor(e.Spec.Name) != nil {
		return
	}
	cfg := *r.Config
	spec := *e.Spec
	spec.Fleet = true
	cfg.Executors = append(slices.Clip(cfg.Executors), &spec)
	r.Config = &cfg
	for c := 1; c <= spec.Clones; c++ {
		r.Clone(muster.Slot(spec.Name, c))
	}
}

// rateLimited folds a RateLimited event: the count, and the credential's
// pace as the engine computes it.
func (r *Run) rateLimited(e *muster.Event) {
	r.RateLimits[e.Executor]++
	if r.Config == nil {
		return
	}
	spec := r.Config.Executor(e.Executor)
	if spec == nil {
		return
	}
	cred := spec.Credential()
	running, capacity := r.load(cred)
	p, ok := r.Paces[cred]
	r.Paces[cred] = muster.NextPace(p, ok, e, cred, running, capacity)
}

// load counts the agents at work on a credential and its capacity.
func (r *Run) load(cred string) (running, capacity int) {
	for _, x := range r.Config.Executors {
		if x.Credential() != cred {
			continue
		}
		capacity += x.Capacity()
		for c := 1; c <= x.Clones; c++ {
			if cl := r.slots[muster.Slot(x.Name, c)]; cl != nil && cl.Task != "" {
				running++
			}
		}
	}
	return running, capacity
}

// HeldBack returns the pace of an executor's credential when, at now, it
// holds the executor back from another start (a backoff, or its limit).
func (r *Run) HeldBack(executor string, now time.Time) (muster.Pace, bool) {
	if r.Config == nil {
		return muster.Pace{}, false
	}
	spec := r.Config.Executor(executor)
	if spec == nil {
		return muster.Pace{}, false
	}
	cred := spec.Credential()
	p, ok := r.Paces[cred]
	if !ok {
		return p, false
	}
	running, capacity := r.load(cred)
	held, _ := p.Holds(now, running, capacity)
	return p, held
}

// Package engine is muster's pure scheduler. State is a fold over the
// journal's events; Decide turns a state and the time into actions. The
// package starts no goroutines, runs no processes and reads no clock, so
// every decision can be replayed and property-tested.
package engine

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/muster-run/muster"
)

// TaskState is where one task stands.
type TaskState struct {
	Task     *muster.Task
	Index    int // plan order
	State    muster.TaskState
	Attempts int    // attempts started
	Executor string // the slot of the latest attempt
	Clone    int
	Commit   string // on the run branch, once integrated
	Reason   string // why it failed, was skipped or cancelled
	// Cause is why it was cancelled (a cancelled task only).
	Cause muster.CancelCause
	Phase string
	Round int
	Usage muster.Usage
	// AttemptUsage is what the latest attempt has spent.
	AttemptUsage muster.Usage
	Started      time.Time // latest attempt's start
	Ended        time.Time
	// Uncharged counts attempts that ended in a rate limit: they do not
	// count against the task's Retries (up to MaxUncharged).
	Uncharged int
	// RetryAt is when a task whose attempt failed and is retried may
	// start again (RetryBackoff after the failure's time).
	RetryAt time.Time
	// paced says the latest attempt hit a usage or rate limit, which
	// paces its executor instead (no backoff of the task's own).
	paced bool
	// Worker is the fleet worker the latest attempt's coder ran on ("":
	// locally), WorkerClone its clone there.
	Worker      string
	WorkerClone int
	// Followup and Feedback are the latest TaskReopened's: the feedback
	// the task's next attempt acts on (Followup 0: none).
	Followup int
	Feedback string
	// Race is the task's current or last race (nil: never raced).
	Race *Race

	// waiting counts dependencies not yet succeeded; dependents lists the
	// tasks that wait on this one.
	waiting    int
	dependents []muster.TaskID
	priority   float64
	// unleased: running, its coder's clone given back while its commit
	// waits for integration (counted in State.unleased).
	unleased bool
}

// Terminal reports whether the task has ended for this run.
func (t *TaskState) Terminal() bool {
	switch t.State {
	case muster.StateSucceeded, muster.StateFailed, muster.StateSkipped, muster.StateCancelled:
		return true
	}
	return false
}

// Move is a move of the run branch to Commit, for Task, from From. A
// batch's move names its chain: the task commits, in order, whose
// Integrated events are still to come (the last is Commit).
type Move struct {
	Task   muster.TaskID
	Commit string
	From   string
	Chain  []muster.ChainLink
}

// Lease is a clone at work on a task.
type Lease struct {
	Task     muster.TaskID
	Executor string
	Clone    int
	Role     muster.Role
}

// State is everything the scheduler knows, folded from events.
type State struct {
	Run    string
	Plan   string
	Base   string
	Branch string
	Config *muster.Config
	Start  time.Time
	// RunState is running until RunFinished or RunInterrupted.
	RunState string
	LastSeq  int64
	LastTime time.Time
	// Gaps are the stretches no muster process ran the run (a crash or
	// an interrupt until the resume): Elapsed and Active leave them out.
	Gaps []muster.Gap
	gaps muster.GapTracker

	Tasks map[muster.TaskID]*TaskState
	Order []muster.TaskID
	// Leases maps a slot ("name#n") to its lease.
	Leases map[string]Lease
	Usage  muster.Usage
	// Stopped is set once a failure stops the run (on_failure = stop).
	Stopped string
	// BlockedUntil holds executors paused by a usage limit.
	BlockedUntil map[string]time.Time
	// Paces holds the adaptive limits of rate-limited credentials
	// (muster.ExecutorSpec.Credential), from RateLimited events.
	Paces map[string]muster.Pace
	// Tip is the run branch as muster last moved it: the latest
	// Integrated commit, or Base. Only muster moves the branch, and only
	// from Tip.
	Tip string
	// Moving is the move of the run branch muster announced last
	// (Integrating) and has not yet recorded as done (Integrated), or
	// nil. After a crash the branch is at Tip or, if the move went
	// through, at Moving.Commit.
	Moving *Move
	// Procs maps a leased slot to the process its agent runs as (the
	// latest AgentStarted), until the lease is released.
	Procs map[string]muster.Process

	ready     []muster.TaskID        // pending tasks with no waiting deps, by priority
	doomed    map[muster.TaskID]bool // pending tasks with a failed or skipped dependency
	weights   map[muster.TaskID]float64
	coders    int // coder leases
	codeTasks int // Kind: code tasks in the plan
	writers   int // leases of tasks that write
	unleased  int // running tasks that hold no clone (TaskState.unleased)

	// doneUsage sums the usage of the doneCount tasks that succeeded
	// (the running average of Expected); budgetWarned is set by the
	// 80 % warning.
	doneUsage    muster.Usage
	doneCount    int
	budgetWarned bool
	// progress is the time of the latest event but a Warning: a fleet run
	// with nothing to do waits [fleet] join_wait from it (crew.go).
	progress time.Time
}

// NewState returns an empty state.
func NewState() *State {
	return &State{
		Tasks:        map[muster.TaskID]*TaskState{},
		Leases:       map[string]Lease{},
		BlockedUntil: map[string]time.Time{},
		Procs:        map[string]muster.Process{},
		Paces:        map[string]muster.Pace{},
		doomed:       map[muster.TaskID]bool{},
		RunState:     muster.RunRunning,
	}
}

// Replay folds events into a new state.
func Replay(events []muster.Event) (*State, error) {
	s := NewState()
	for i := range events {
		if err := s.Apply(&events[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SetWeights sets expected durations (any unit) used for priorities, in
// place of those the journal gave (TasksPlanned's Expected); a task with
// none weighs the median of the others (1 when no task has one). Weights
// only order ready tasks.
func (s *State) SetWeights(w map[muster.TaskID]float64) {
	s.weights = w
	s.computePriorities()
	s.sortReady()
}

// expect adds a TasksPlanned's expected durations (seconds) to the
// weights; a value that is not a positive, finite number of seconds
// under a year is no hint and is left out.
func (s *State) expect(exp map[muster.TaskID]float64) {
	for id, v := range exp {
		if !(v > 0 && v < 365*24*3600) { // NaN fails both
			continue
		}
		if s.weights == nil {
			s.weights = map[muster.TaskID]float64{}
		}
		s.weights[id] = v
	}
}

// Apply folds one event into the state. It rejects events that break the
// state machine (starting a task that is not ready, using a busy clone).
func (s *State) Apply(e *muster.Event) error {
	if e.Seq != 0 {
		if e.Seq <= s.LastSeq {
			return fmt.Errorf("event %d (%s) out of order after %d", e.Seq, e.Type, s.LastSeq)
		}
		s.LastSeq = e.Seq
	}
	s.gaps.Add(e)
	s.Gaps = s.gaps.Gaps
	if !e.Time.IsZero() {
		s.LastTime = e.Time
		if e.Type != muster.EvWarning {
			s.progress = e.Time
		}
	}
	switch e.Type {
	case muster.EvRunStarted, muster.EvRunResumed, muster.EvRunFinished, muster.EvRunInterrupted, muster.EvWarning:
		return s.applyRun(e)
	case muster.EvExecutorLeased, muster.EvExecutorRelease, muster.EvAgentStarted, muster.EvWorkerAssigned, muster.EvExecutorPaused, muster.EvRateLimited:
		return s.applyCrew(e)
	case muster.EvExecutorJoined:
		s.applyJoined(e)
	case muster.EvTaskStarted, muster.EvPhase, muster.EvFixRound, muster.EvTokensUsed:
		return s.applyAttempt(e)
	case muster.EvIntegrating, muster.EvIntegrated:
		return s.applyIntegration(e)
	case muster.EvTaskSucceeded, muster.EvTaskFailed, muster.EvTaskSkipped, muster.EvTaskCancelled:
		return s.applyEnd(e)
	case muster.EvTaskReopened:
		return s.applyReopened(e)
	case muster.EvTasksPlanned:
		s.expect(e.Expected)
		return s.addTasks(e.Tasks, e.Task)
	case muster.EvRaceStarted, muster.EvCandidateFinished, muster.EvRaceWon:
		return s.applyRace(e)
	case muster.EvPlanAdopted:
		return s.applyAdopted(e)
	case muster.EvNote, muster.EvToolUse, muster.EvMessage, muster.EvGateRan,
		muster.EvReviewed, muster.EvViolation, muster.EvCommitted:
		// Facts for reports and views; no scheduling state.
	default:
		// Unknown types from a newer schema are kept in the journal and
		// ignored here.
	}
	return nil
}

// applyRun folds the run's own events: started, resumed, ended, warned.
func (s *State) applyRun(e *muster.Event) error {
	switch e.Type {
	case muster.EvRunStarted:
		s.Run, s.Plan, s.Base, s.Branch, s.Config = e.Run, e.Plan, e.Base, e.Branch, e.Config
		s.Tip = e.Base
		s.Start = e.Time
		s.RunState = muster.RunRunning
	case muster.EvRunResumed:
		s.RunState = muster.RunRunning
		s.Stopped = ""
		if e.Config != nil {
			// A new limit earns its own 80 % warning.
			if s.Config == nil || s.Config.Run.BudgetUSDMicros != e.Config.Run.BudgetUSDMicros || s.Config.Run.BudgetTokens != e.Config.Run.BudgetTokens {
				s.budgetWarned = false
			}
			s.Config = e.Config
		}
		for _, id := range s.Order {
			t := s.Tasks[id]
			if t.State != muster.StateSucceeded && t.State != muster.StateRunning {
				t.State = muster.StatePending
				t.Reason = ""
			}
		}
		s.doomed = map[muster.TaskID]bool{}
		s.rebuildReady()
	case muster.EvRunFinished:
		s.RunState = e.State
	case muster.EvRunInterrupted:
		s.RunState = muster.RunInterrupted
	case muster.EvWarning:
		if e.Reason == BudgetWarnReason {
			s.budgetWarned = true
		}
	}
	return nil
}

// applyCrew folds the crew's events: leases, agents' processes, fleet workers, pauses.
func (s *State) applyCrew(e *muster.Event) error {
	switch e.Type {
	case muster.EvExecutorLeased:
		slot := muster.Slot(e.Executor, e.Clone)
		if l, busy := s.Leases[slot]; busy {
			return fmt.Errorf("event %d: %s leased to %s while working on %s", e.Seq, slot, e.Task, l.Task)
		}
		role := e.Role
		if role == "" {
			role = muster.RoleCoder
		}
		s.Leases[slot] = Lease{Task: e.Task, Executor: e.Executor, Clone: e.Clone, Role: role}
		// A running task's coder that gave its clone back while its commit
		// waited for integration and leased one again for a fix round
		// works there now.
		if t := s.Tasks[e.Task]; t != nil && role == muster.RoleCoder && t.State == muster.StateRunning {
			t.Executor, t.Clone = e.Executor, e.Clone
			s.setUnleased(t, false)
		}
		if role != muster.RoleReviewer {
			s.coders++
			if t := s.Tasks[e.Task]; t != nil && t.Task.EffectiveAuthority() != muster.AuthorityRead {
				s.writers++
			}
		}
	case muster.EvExecutorRelease:
		slot := muster.Slot(e.Executor, e.Clone)
		l, ok := s.Leases[slot]
		if !ok {
			return fmt.Errorf("event %d: %s released but not leased", e.Seq, slot)
		}
		delete(s.Leases, slot)
		delete(s.Procs, slot)
		// A coder's clone given back before its task ended, and no other
		// clone held for it (a race's candidates hold several): the
		// task's commit waits for integration, the task still runs.
		if t := s.Tasks[l.Task]; t != nil && l.Role == muster.RoleCoder && t.State == muster.StateRunning && !s.holdsCoder(l.Task) {
			s.setUnleased(t, true)
		}
		if l.Role != muster.RoleReviewer {
			s.coders--
			if t := s.Tasks[l.Task]; t != nil && t.Task.EffectiveAuthority() != muster.AuthorityRead {
				s.writers--
			}
		}
	case muster.EvAgentStarted:
		if e.PID > 0 {
			s.Procs[muster.Slot(e.Executor, e.Clone)] = muster.Process{PID: e.PID, Start: e.PIDStart, Boot: e.BootID}
		}
	case muster.EvWorkerAssigned:
		if t := s.Tasks[e.Task]; t != nil && e.Role != muster.RoleReviewer {
			t.Worker, t.WorkerClone = e.Worker, e.WorkerClone
		}
	case muster.EvExecutorPaused:
		if e.Until != nil {
			s.BlockedUntil[e.Executor] = *e.Until
		}
		if t := s.Tasks[e.Task]; t != nil {
			t.paced = true
		}
	case muster.EvRateLimited:
		if t := s.Tasks[e.Task]; t != nil {
			t.paced = true
		}
		if s.Config != nil {
			s.applyRateLimited(e)
		}
	}
	return nil
}

// applyAttempt folds an attempt under way: its start, phases, fix rounds and usage.
func (s *State) applyAttempt(e *muster.Event) error {
	switch e.Type {
	case muster.EvTaskStarted:
		t, err := s.task(e)
		if err != nil {
			return err
		}
		if t.State != muster.StatePending || t.waiting > 0 {
			return fmt.Errorf("event %d: task %s started while %s", e.Seq, t.Task.ID, t.describe())
		}
		t.State = muster.StateRunning
		t.Attempts = e.Attempt
		t.Executor, t.Clone = e.Executor, e.Clone
		t.Started = e.Time
		t.Reason, t.Phase, t.Round = "", "", 0
		t.Worker, t.WorkerClone = "", 0
		t.AttemptUsage = muster.Usage{}
		t.paced = false
		s.removeReady(t.Task.ID)
	case muster.EvPhase:
		if t := s.Tasks[e.Task]; t != nil {
			t.Phase, t.Round = e.Phase, e.Round
		}
	case muster.EvFixRound:
		if t := s.Tasks[e.Task]; t != nil {
			t.Round = e.Round
		}
	case muster.EvTokensUsed:
		if !e.Counted() {
			break // an agent's claim beside the provider's numbers
		}
		u := e.Credited()
		s.Usage.Add(u)
		if t := s.Tasks[e.Task]; t != nil {
			t.Usage.Add(u)
			t.AttemptUsage.Add(u)
			if c := t.raceCandidate(e.Attempt); c != nil {
				c.Usage.Add(u)
			}
		}
	}
	return nil
}

// applyIntegration folds a move of the run branch: announced, then each commit recorded.
func (s *State) applyIntegration(e *muster.Event) error {
	switch e.Type {
	case muster.EvIntegrating:
		chain := append([]muster.ChainLink(nil), e.Chain...)
		if len(chain) == 0 {
			chain = []muster.ChainLink{{Task: e.Task, Commit: e.Commit}}
		}
		s.Moving = &Move{Task: e.Task, Commit: e.Commit, From: e.Tip, Chain: chain}
	case muster.EvIntegrated:
		if t := s.Tasks[e.Task]; t != nil {
			t.Commit = e.Commit
		}
		// A batch's move is done when its last commit is recorded: until
		// then the tip stays where the move started, so that a resume
		// finds the branch at the announced move and records the rest.
		if m := s.Moving; m != nil {
			n := len(m.Chain)
			m.Chain = slices.DeleteFunc(m.Chain, func(l muster.ChainLink) bool { return l.Task == e.Task && l.Commit == e.Commit })
			if len(m.Chain) > 0 && len(m.Chain) < n {
				break
			}
			if len(m.Chain) == 0 {
				s.Tip, s.Moving = m.Commit, nil
				break
			}
			// Not this move's (a journal before batching): as before.
		}
		s.Tip, s.Moving = e.Commit, nil
	}
	return nil
}

// applyEnd folds a task's end: succeeded, failed (for good or to retry), skipped or cancelled.
func (s *State) applyEnd(e *muster.Event) error {
	if t := s.Tasks[e.Task]; t != nil {
		s.setUnleased(t, false)
		t.endRace(e)
	}
	switch e.Type {
	case muster.EvTaskSucceeded:
		t, err := s.task(e)
		if err != nil {
			return err
		}
		if t.State == muster.StateSucceeded {
			return fmt.Errorf("event %d: task %s succeeded twice", e.Seq, t.Task.ID)
		}
		s.removeReady(t.Task.ID)
		t.State, t.Reason, t.Ended = muster.StateSucceeded, e.Reason, e.Time
		if !t.Usage.IsZero() {
			s.doneUsage.Add(t.Usage)
			s.doneCount++
		}
		if e.Commit != "" {
			t.Commit = e.Commit
		}
		for _, d := range t.dependents {
			dt := s.Tasks[d]
			dt.waiting--
			if dt.waiting == 0 && dt.State == muster.StatePending {
				s.insertReady(d)
			}
		}
	case muster.EvTaskFailed:
		t, err := s.task(e)
		if err != nil {
			return err
		}
		t.Reason, t.Ended = e.Reason, e.Time
		if e.Retry {
			t.State = muster.StatePending
			if !t.paced {
				t.RetryAt = e.Time.Add(RetryBackoff(s.Run, t.Task.ID, t.Attempts-t.Uncharged))
			}
			if t.waiting == 0 {
				s.insertReady(t.Task.ID)
			}
		} else {
			t.State = muster.StateFailed
			s.doom(t)
			if s.Config != nil && s.Config.Run.OnFailure == muster.OnFailureStop && s.Stopped == "" {
				s.Stopped = string(t.Task.ID)
			}
		}
	case muster.EvTaskSkipped, muster.EvTaskCancelled:
		t, err := s.task(e)
		if err != nil {
			return err
		}
		s.removeReady(t.Task.ID)
		t.State, t.Reason, t.Ended = muster.StateSkipped, e.Reason, e.Time
		delete(s.doomed, t.Task.ID)
		if e.Type == muster.EvTaskCancelled {
			t.State, t.Cause = muster.StateCancelled, e.CancelCause()
		} else {
			s.doom(t)
		}
	}
	return nil
}

// applyReopened folds a succeeded task taken up again: its dependents wait for it once more.
func (s *State) applyReopened(e *muster.Event) error {
	switch e.Type {
	case muster.EvTaskReopened:
		t, err := s.task(e)
		if err != nil {
			return err
		}
		if t.State != muster.StateSucceeded {
			return fmt.Errorf("event %d: task %s reopened while %s", e.Seq, t.Task.ID, t.State)
		}
		t.State, t.Reason, t.Followup, t.Feedback = muster.StatePending, "", e.Followup, e.Message
		// Its dependents wait for it again, as its success had let them
		// go (TaskSucceeded counts them down once more).
		for _, d := range t.dependents {
			dt := s.Tasks[d]
			dt.waiting++
			s.removeReady(d)
		}
		if t.waiting == 0 {
			s.insertReady(t.Task.ID)
		}
	}
	return nil
}

// doom marks the pending dependents of a failed or skipped task.
func (s *State) doom(t *TaskState) {
	for _, d := range t.dependents {
		if s.Tasks[d].State == muster.StatePending {
			s.doomed[d] = true
		}
	}
}

func (s *State) doomedInOrder() []muster.TaskID {
	if len(s.doomed) == 0 {
		return nil
	}
	out := make([]muster.TaskID, 0, len(s.doomed))
	for id := range s.doomed {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return s.Tasks[out[i]].Index < s.Tasks[out[j]].Index })
	return out
}

func (s *State) task(e *muster.Event) (*TaskState, error) {
	t := s.Tasks[e.Task]
	if t == nil {
		return nil, fmt.Errorf("event %d (%s): unknown task %q", e.Seq, e.Type, e.Task)
	}
	return t, nil
}

func (t *TaskState) describe() string {
	if t.State == muster.StatePending && t.waiting > 0 {
		return fmt.Sprintf("waiting on %d dependencies", t.waiting)
	}
	return string(t.State)
}

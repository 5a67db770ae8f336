package muster

import (
	"strings"
	"time"
)

// SchemaVersion is the journal's schema, recorded in RunStarted.
const SchemaVersion = 1

// EventType names an event in the journal.
type EventType string

// Event types. The journal holds them in order; engine.State folds them.
const (
	EvRunStarted      EventType = "RunStarted"     // Schema, Run, Plan, Base, Branch, Config
	EvRunResumed      EventType = "RunResumed"     // a resume took over (Message: why)
	EvTasksPlanned    EventType = "TasksPlanned"   // Tasks (the plan, or a spliced fragment with Task = delegator), Canon
	EvExecutorLeased  EventType = "ExecutorLeased" // Task, Executor, Clone, Role
	EvExecutorRelease EventType = "ExecutorReleased"
	EvTaskStarted     EventType = "TaskStarted"   // Task, Attempt, Executor, Clone, Role
	EvPhase           EventType = "Phase"         // Task, Phase (agent, gates, review, integrating), Round
	EvToolUse         EventType = "ToolUse"       // Task, Tool, Args
	EvMessage         EventType = "Message"       // Task, Message: agent transcript excerpt (untrusted)
	EvTokensUsed      EventType = "TokensUsed"    // Task, Executor, Clone, Role, Model, tokens, CostMicros, Estimated
	EvGateRan         EventType = "GateRan"       // Task, Gate, Passed, Output, Baseline, NotCharged, Reason
	EvReviewed        EventType = "Reviewed"      // Task, Executor, Clone, Findings
	EvFixRound        EventType = "FixRound"      // Task, Round, Reason
	EvViolation       EventType = "Violation"     // Task, Paths (Reason "tampered": what changed in the user's repository)
	EvCommitted       EventType = "Committed"     // Task, Commit (task commit, before integration)
	EvIntegrating     EventType = "Integrating"   // Task, Commit (the run branch's next tip), Tip (its tip now), Chain (a batch: every task commit of the move, in order, the last being Commit): durable before muster moves the branch
	EvIntegrated      EventType = "Integrated"    // Task, Commit (on the run branch), Tip (the branch's tip after the move: a batch's top)
	EvTaskSucceeded   EventType = "TaskSucceeded" // Task, Attempt, Commit (or empty), Reason ("satisfied", "no change")
	EvTaskFailed      EventType = "TaskFailed"    // Task, Attempt, Reason, Retry (true: will be retried)
	EvTaskSkipped     EventType = "TaskSkipped"   // Task, Reason
	EvTaskCancelled   EventType = "TaskCancelled" // Task, Attempt, Reason, Cause (interrupted, budget, stopped)
	EvNote            EventType = "Note"          // Task, Message: a finding shared with later tasks
	EvLoopAttempt     EventType = "LoopAttempt"   // Task, Round (0: before any repair), Gate, Passed, Output: one check of a Loop
	EvLoopEnded       EventType = "LoopEnded"     // Task, State (resolved, exhausted, failed), Round, Reason
	EvWarning         EventType = "Warning"       // Message
	EvRunFinished     EventType = "RunFinished"   // State
	EvRunInterrupted  EventType = "RunInterrupted"
	EvAgentStarted    EventType = "AgentStarted"   // Task, Executor, Clone, Role, PID, PIDStart, BootID: the agent's process (group) runs
	EvExecutorPaused  EventType = "ExecutorPaused" // Executor, Until, Reason: a usage limit; no new work there until then
	EvWorkerAssigned  EventType = "WorkerAssigned" // Task, Executor, Clone, Role, Worker, WorkerClone: a fleet worker took the invocation
	// EvRateLimited (Task, Attempt, Executor, Clone, Reason, Until: the
	// agent's retry-after, if it named one) paces the executor's
	// credential (engine/pace.go); the attempt is not charged to the
	// task's Retries.
	EvRateLimited EventType = "RateLimited"
	// EvRefused (Task, Attempt, Executor, Clone, Role, Worker: the
	// sender, Subject, Reason) is a fleet report the orchestrator refused:
	// a claim, a record or a result that is not of the lease it accepted,
	// or that names another worker than its subject. It never fails or
	// charges the task.
	EvRefused EventType = "Refused"
	// EvBlocked (Task, Attempt, Executor, Clone, Role, Host, Port, Reason)
	// is a request muster's endpoint or proxy refused an invocation: once
	// per host and port per attempt, bounded (ARCHITECTURE.md §8.5).
	EvBlocked EventType = "Blocked"
	// EvTaskReopened (Task, Followup, Message) gives a succeeded task
	// feedback to act on: a failed check or a review comment on its pull
	// request (muster pr --follow). The task runs again on the run
	// branch's tip, through its gates, review and the integration queue;
	// its new commit carries Muster-Followup: Followup. Message is the
	// feedback, untrusted.
	EvTaskReopened EventType = "TaskReopened"
	// EvRaceStarted (Task, Attempt: the first new candidate's, Race: the
	// candidates started, each Executor, Clone and Attempt; Reason: why
	// fewer than asked run) starts a race's candidates, each an ordinary
	// attempt on its own clone. Candidates an interrupted race finished
	// are kept and not started again.
	EvRaceStarted EventType = "RaceStarted"
	// EvCandidateFinished (Task, Attempt, Executor, Clone, Passed, Commit:
	// the candidate's change committed into muster's object store, Base,
	// Stat, Reason: why it is out) records a race candidate's end, durable
	// before the race compares it.
	EvCandidateFinished EventType = "CandidateFinished"
	// EvRaceWon (Task, Attempt, Executor, Clone: the winner; Commit,
	// Judge: the judge's slot, State: how it was chosen, RaceJudge,
	// RaceSmallest, RaceFirst, RaceOnly; Reason) names a race's winner,
	// whose commit then goes through the integration queue.
	EvRaceWon EventType = "RaceWon"
	// EvPlanAdopted (Plan: the version's file name in the run directory,
	// such as "plan-2.md"; PlanHash: its hash in the run's canonical
	// form, Canon; Tasks: every task of that version; Message: what
	// changed, for people) adopts an edited plan file at a resume, right
	// after the RunResumed: tasks that have not succeeded take their new
	// definition, new tasks join the run, succeeded ones keep theirs
	// (engine/adopt.go). The receipt seals each version's hash.
	EvPlanAdopted EventType = "PlanAdopted"
	// EvExecutorJoined (Executor, Worker: the fleet worker that brought
	// it, Spec: its name, kind, roles and clones) adds an executor to a
	// running run's crew: a fleet worker registered mid-run with an
	// executor name the run did not know. Journaled before any task
	// leases it; folded on resume (engine/state.go), so the replayed run
	// has the crew it had.
	EvExecutorJoined EventType = "ExecutorJoined"
)

// How a race's winner was chosen (RaceWon's State).
const (
	RaceJudge    = "judge"    // the judge named it
	RaceSmallest = "smallest" // the smallest passing change (a tie, silence or a bad verdict)
	RaceFirst    = "first"    // Race: first: the first to pass
	RaceOnly     = "only"     // the one candidate that passed
)

// RaceCandidate is one candidate a RaceStarted starts.
type RaceCandidate struct {
	Executor string `json:"executor"`
	Clone    int    `json:"clone"`
	Attempt  int    `json:"attempt"`
}

// Slot is the candidate's "executor#clone".
func (c RaceCandidate) Slot() string { return Slot(c.Executor, c.Clone) }

// DiffStat is the size of a change: lines added and deleted (as git diff
// --numstat counts them) and files touched.
type DiffStat struct {
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
	Files   int `json:"files"`
}

// Lines is the added plus deleted lines.
func (d DiffStat) Lines() int { return d.Added + d.Deleted }

// SmallerChange is a race's tie-break, in one place for the engine and the
// driver: the change with fewer added plus deleted lines, then fewer
// files, then the one started first (its order).
func SmallerChange(a DiffStat, aOrder int, b DiffStat, bOrder int) bool {
	if a.Lines() != b.Lines() {
		return a.Lines() < b.Lines()
	}
	if a.Files != b.Files {
		return a.Files < b.Files
	}
	return aOrder < bOrder
}

// Event is one line of the journal. Fields not used by a type are empty.
// Seq starts at 1 and increases by one per line; Time is when the event
// was recorded (replay never reads the clock).
type Event struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	Type EventType `json:"type"`

	Schema int    `json:"schema,omitempty"`
	Run    string `json:"run,omitempty"`
	// Kind (RunStarted) is RunKindPlan for a plan session (muster plan);
	// empty for a run.
	Kind   string `json:"kind,omitempty"`
	Plan   string `json:"plan,omitempty"`
	Base   string `json:"base,omitempty"`
	Branch string `json:"branch,omitempty"`
	// Ref is the user's branch the run started from (for --merge).
	Ref string `json:"ref,omitempty"`
	// Owner (RunStarted, RunResumed) names the muster process that drives
	// the run from this event on ("PID.STARTTIME"); every process it
	// starts carries it in its environment, so that a resume can stop
	// what a muster that died left running.
	Owner string `json:"owner,omitempty"`
	// Config is the effective configuration of a RunStarted.
	Config *Config `json:"config,omitempty"`
	Tasks  []*Task `json:"tasks,omitempty"`
	// Expected (TasksPlanned of the plan) holds, in seconds, how long
	// tasks of the plan took in an earlier run of the same plan in this
	// repository (journal.Durations): hints that order ready tasks,
	// longest first, and nothing else.
	Expected map[TaskID]float64 `json:"expected,omitempty"`
	// Canon (TasksPlanned of the plan) is the version of the plan's
	// canonical form (planfile.CanonicalVersion) the run's receipt hashes
	// the plan with; 0 in journals older than the field: version 1.
	Canon int `json:"canon,omitempty"`
	// PlanHash (PlanAdopted) is the adopted version's hash.
	PlanHash string `json:"plan_hash,omitempty"`

	Task     TaskID `json:"task,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Round    int    `json:"round,omitempty"`
	Executor string `json:"executor,omitempty"`
	Clone    int    `json:"clone,omitempty"`
	Role     Role   `json:"role,omitempty"`
	Phase    string `json:"phase,omitempty"`

	Tool string `json:"tool,omitempty"`
	Args string `json:"args,omitempty"`

	Model string `json:"model,omitempty"`
	Usage
	// Source (TokensUsed) is who counted the usage: "" the agent,
	// UsageProvider the provider's own fields in the responses muster
	// forwarded, UsageClaim the agent's claim where the provider's
	// numbers were there (shown beside them, never counted).
	Source string `json:"source,omitempty"`

	// Host and Port (Blocked) are what was refused.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`

	Gate     string `json:"gate,omitempty"`
	Passed   *bool  `json:"passed,omitempty"`
	Baseline string `json:"baseline,omitempty"` // "pass", "fail", "" (not computed)
	// NotCharged (GateRan) marks a failure that was there before the
	// change: recorded, not charged to the task. Read it with Uncharged.
	NotCharged bool      `json:"not_charged,omitempty"`
	Output     string    `json:"output,omitempty"`
	Findings   []Finding `json:"findings,omitempty"`
	Paths      []string  `json:"paths,omitempty"`

	Commit string `json:"commit,omitempty"`
	Tip    string `json:"tip,omitempty"`
	// Chain (Integrating) lists a batch's commits in the order the run
	// branch gets them; empty for a move of one task's commit (and in
	// journals older than batching).
	Chain []ChainLink `json:"chain,omitempty"`

	Reason string `json:"reason,omitempty"`
	// Cause (TaskCancelled) is why the task was cancelled, for code to
	// test; Reason is the sentence for people.
	Cause   CancelCause `json:"cause,omitempty"`
	Retry   bool        `json:"retry,omitempty"`
	Message string      `json:"message,omitempty"`
	State   string      `json:"state,omitempty"`
	// Until is when a paused executor takes work again (ExecutorPaused).
	Until *time.Time `json:"until,omitempty"`
	// SessionID is the agent's own session, so a fix round can resume it.
	SessionID string `json:"session_id,omitempty"`
	PID       int    `json:"pid,omitempty"`
	// PIDStart and BootID (AgentStarted) tell the journaled process apart
	// from a later one with the same pid: its start time in clock ticks
	// after boot, and the boot it started in.
	PIDStart uint64 `json:"pid_start,omitempty"`
	BootID   string `json:"boot_id,omitempty"`
	// Spec (ExecutorJoined) is the executor that joined the crew: its
	// name, kind, roles and clones (no secret: what a worker registers).
	Spec *ExecutorSpec `json:"spec,omitempty"`
	// Worker is the fleet worker (WorkerAssigned, ExecutorJoined) and
	// WorkerClone its clone.
	Worker      string `json:"worker,omitempty"`
	WorkerClone int    `json:"worker_clone,omitempty"`
	// Followup (TaskReopened) numbers a task's follow-ups from 1.
	Followup int `json:"followup,omitempty"`
	// Subject (Refused) is the NATS subject a refused report came on.
	Subject string `json:"subject,omitempty"`
	// FleetSeq, on the events made of a fleet worker's report, is the
	// report's sequence in the fleet's event stream: a resumed run reads
	// the stream again after the highest one its journal holds, so a
	// report is taken once across an orchestrator's crash.
	FleetSeq uint64 `json:"fleet_seq,omitempty"`
	// Race (RaceStarted) lists the candidates started; Stat
	// (CandidateFinished) is a passing candidate's change size; Judge
	// (RaceWon) is the slot of the judge that named the winner.
	Race  []RaceCandidate `json:"race,omitempty"`
	Stat  *DiffStat       `json:"stat,omitempty"`
	Judge string          `json:"judge,omitempty"`
}

// Sources of usage (Event.Source, Record.Source).
const (
	UsageProvider = "provider"
	UsageClaim    = "claim"
)

// UsageUnavailable is the Reason of the provider-source TokensUsed event
// (zero usage) muster records for an invocation behind its endpoint when
// a response carried no usage fields: the agent's numbers count then.
const UsageUnavailable = "provider usage unavailable"

// Counted reports whether a TokensUsed event counts toward sums and
// budgets: every one but an agent's claim that the provider's own
// numbers replace.
func (e *Event) Counted() bool { return e.Type == EvTokensUsed && e.Source != UsageClaim }

// ReasonTampered is the Reason of a Violation event for a change to the
// user's repository found while the attempt ran; Paths name each change.
const ReasonTampered = "tampered"

// ReasonPreExisting starts the Reason of a GateRan event whose failure
// was there before the change (on the task's base, or on the tip it was
// integrated onto), so it is recorded but not charged to the task.
const ReasonPreExisting = "pre-existing"

// Uncharged reports whether e is a gate failure not charged to its task.
// Journals written before the NotCharged field say it only in the reason
// (its ReasonPreExisting prefix); it is read from there once, here.
func (e *Event) Uncharged() bool {
	if e.Type != EvGateRan || e.Passed == nil || *e.Passed {
		return false
	}
	return e.NotCharged || strings.HasPrefix(e.Reason, ReasonPreExisting)
}

// Slot returns "executor#clone" for events that carry a clone.
func (e *Event) Slot() string {
	if e.Executor == "" {
		return ""
	}
	return Slot(e.Executor, e.Clone)
}

// Finding is one review finding.
type Finding struct {
	Severity string `json:"severity"` // critical, major, minor
	Title    string `json:"title"`
	Detail   string `json:"detail,omitempty"`
	Path     string `json:"path,omitempty"`
	Line     int    `json:"line,omitempty"`
}

// Blocking reports whether the finding earns a fix round.
func (f Finding) Blocking() bool { return f.Severity == "critical" || f.Severity == "major" }

// CancelCause is why a task was cancelled.
type CancelCause string

// Cancel causes.
const (
	CauseInterrupted CancelCause = "interrupted" // a signal, or the run was stopped from outside
	CauseBudget      CancelCause = "budget"      // the run's or the task's budget
	CauseStopped     CancelCause = "stopped"     // the run stopped for another reason (on_failure stop, an environment error)
	// CausePR is the Cause of a RunResumed that a muster pr --follow
	// pass made: it reopens tasks with their pull request's feedback.
	CausePR CancelCause = "pr"
)

// CancelCause returns why a TaskCancelled event cancelled its task. Journals
// written before the Cause field say it only in the reason ("budget: ...",
// "interrupted"); it is read from there once, here.
func (e *Event) CancelCause() CancelCause {
	switch {
	case e.Cause != "":
		return e.Cause
	case strings.HasPrefix(e.Reason, "budget:"):
		return CauseBudget
	case e.Reason == "interrupted":
		return CauseInterrupted
	}
	return CauseStopped
}

// TaskState is where a task stands, as status --json prints it.
type TaskState string

// Task states.
const (
	StatePending   TaskState = "pending"
	StateRunning   TaskState = "running"
	StateSucceeded TaskState = "succeeded"
	StateFailed    TaskState = "failed"
	StateSkipped   TaskState = "skipped"
	StateCancelled TaskState = "cancelled"
)

// RunKindPlan marks the journal of a plan session: a planner agent
// writing a plan, with its usage, but no run branch and nothing to resume.
const RunKindPlan = "plan"

// Run states.
const (
	RunRunning     = "running"
	RunSucceeded   = "succeeded"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
)

// ChainLink is one task commit of an integration batch.
type ChainLink struct {
	Task   TaskID `json:"task"`
	Commit string `json:"commit"`
}

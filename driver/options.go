package driver

import (
	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// Options configure a run. Plan and Config are required for a new run;
// a resumed run takes them from Replayed.
type Options struct {
	// RunID, PlanPath (the plan file as the user named it), Base (the
	// commit the run starts from) and Branch (muster/<run-id>) go into
	// RunStarted.
	RunID    string
	PlanPath string
	// Plan holds the tasks of a new run; its Brief goes into every
	// prompt, of a resumed run too.
	Plan *muster.Plan
	// PlanCanon is the version of the plan's canonical form, recorded in
	// TasksPlanned so that the receipt hashes the plan the same way
	// whichever muster seals it.
	PlanCanon int
	// Expected holds, in seconds, how long tasks of a new run's plan
	// took in an earlier run (journal.Durations), journaled in its
	// TasksPlanned: the ready tasks start longest first.
	Expected map[muster.TaskID]float64
	// Config is the journaled configuration of a new run.
	Config *muster.Config
	Base   string
	Branch string
	// Ref is the user's branch the run started from.
	Ref string
	// Replayed holds the journal's events when resuming; empty for a new run.
	Replayed []muster.Event
	// ResumeConfig, when resuming, replaces the recorded config (flags
	// given to resume, such as a raised budget).
	ResumeConfig *muster.Config
	// Reopen, when resuming, are TaskReopened events (Task, Followup,
	// Message) to append after the RunResumed: succeeded tasks that take
	// their pull request's feedback (muster pr --follow). The RunResumed
	// then has Cause CausePR.
	Reopen []muster.Event
	// Adopt, when resuming, is a PlanAdopted event (the edited plan the
	// resume adopts, its version file already written) to append after
	// the RunResumed, synced before anything acts on it.
	Adopt *muster.Event

	// Journal records every event; one that also has Write and Sync
	// (journal.Journal) gets group commits.
	Journal muster.Journal
	// Workspace is the run branch and the clones' worktrees.
	Workspace muster.Workspace
	// Executors maps an executor name (and engine.CodeExecutor) to its adapter.
	Executors map[string]muster.Executor
	// Joins, when set, brings executors that join the crew while the run
	// goes on (a fleet worker with a new executor name): each is
	// journaled as an ExecutorJoined and scheduled from then on.
	Joins <-chan Joined
	// Gates runs gate and check commands; nil runs none.
	Gates muster.GateRunner
	// Setup runs the [setup] commands (confined like a gate, with the
	// package caches writable and the setup network); nil: Gates does.
	Setup muster.GateRunner
	// Price estimates the cost of usage reported without one (optional).
	Price muster.Pricer
	// Clock stamps events (default: the system clock).
	Clock muster.Clock
	// ScratchDir holds per-invocation files outside any worktree.
	ScratchDir string
	// Confine, when set, confines every agent invocation: it may write
	// the paths Confine lists and its clone, its own out/, home and
	// TMPDIR (internal/exchange; never in/), the executor's own writable
	// paths and what the workspace says its own git commands need
	// (nil: agents run unconfined).
	Confine *muster.Confinement
	// Owner names this muster process in the journal (RunStarted,
	// RunResumed): see muster.Event.Owner.
	Owner string
	// Warnings are said once at the start of the run (and of each
	// resume), as Warning events: what the user should know of this
	// run's setting, such as agents running unconfined.
	Warnings []string
	// LogDir, when set, receives one log file per attempt
	// (muster.LogRecord): prompts, agents' output, gate commands and exit
	// statuses, diff stats, each bounded and passed through Redactor.
	LogDir string
	// NotesFile is the run's notes, shared between tasks (default:
	// notes.md beside ScratchDir, i.e. in the run directory).
	NotesFile string
	// OnEvent sees every event after it is durable (synced) and applied,
	// on the loop goroutine, in journal order: keep it quick. With a
	// group-commit journal, events are handed over at the sync that
	// makes them durable, and s is the state as of the last event
	// applied by then. An event that never becomes durable (the journal
	// failed) is never seen.
	OnEvent func(e *muster.Event, s *engine.State)
	// KillOrphan stops what survives of a crashed attempt's process: p
	// leads its own process group. It returns once the group is gone, or
	// an error saying why it left p alone (p is no longer the agent: the
	// pid was reused, or the machine rebooted), which is recorded as a
	// warning.
	KillOrphan func(p muster.Process) error
	// Identify returns the identity of an agent's process as it starts
	// (its start time and boot), journaled in AgentStarted so that a
	// resume kills only that process; nil journals the pid alone.
	Identify func(pid int) muster.Process
	// Fragment parses the tasks a delegating task (Delegates: yes) wrote
	// (data, read by the driver through internal/exchange from the file
	// at path, which names it in messages), validates them against the
	// plan so far (existing) and returns them ready to splice in
	// (depending on parent). It is not called when the file is missing or
	// empty. An error fails the delegating task with its text, before its
	// commit is integrated.
	Fragment func(parent *muster.Task, path string, data []byte, existing []*muster.Task) ([]*muster.Task, error)
	// Reserved are the run's reserved repository paths besides
	// muster.ReservedPaths (the config file in use, the plan, the prices
	// file, the programs the config names by relative path): the
	// workspace refuses changes to them, and the driver names them so.
	Reserved []string
	// GateFiles are the repository files the gates name (their scripts,
	// the Makefile or package.json they run): the workspace refuses a
	// change to one unless the task owns it by name, and a reviewer's
	// prompt flags every one the change touches.
	GateFiles []string
	// Redactor removes secrets from every event before it is journaled
	// or shown, from notes and from prompts (nil: nothing is redacted;
	// the command line passes internal/redact's).
	Redactor muster.Redactor
	// Overlap says whether two tasks' Owns lists can name one path
	// (internal/owns); the integration queue batches only tasks whose
	// Owns do not overlap. nil: every pair overlaps (no batching).
	Overlap func(a, b []string) bool
	// CrashAt is a test-only hook: "POINT[:N]" kills the process with
	// SIGKILL the N-th time POINT is reached (an event type, right after
	// its journal write, or CrashCommit, CrashIntegrate); "panic:POINT[:N]"
	// panics there instead.
	CrashAt string
}

package muster

import (
	"context"
	"time"
)

// Clock tells the time. The driver and commands hold one; the engine
// takes the time as data.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Journal is the append-only log of a run. Append makes the event durable
// (written and fsynced) before it returns.
type Journal interface {
	Append(e *Event) error
	Close() error
}

// Process names an agent's process beyond its pid, which the kernel
// reuses: when it started (clock ticks after boot) and in which boot.
// Zero Start or empty Boot: not known.
type Process struct {
	PID   int
	Start uint64
	Boot  string
}

// ExecRequest is one invocation of an executor clone.
type ExecRequest struct {
	Run       string
	Task      *Task
	Role      Role
	Spec      *ExecutorSpec
	Clone     int
	Attempt   int
	Round     int
	Dir       string // the worktree the agent works in
	Prompt    string
	Authority Authority
	// Model is the model this invocation asks for: the task's Model:, or
	// "" for the executor's own model.
	Model string
	// Scratch is the invocation's own directory outside the worktree,
	// made fresh by muster (internal/exchange, ARCHITECTURE.md §8.2): its
	// in/ holds what muster wrote for it (PromptFile, DiffFile: read-only
	// to the invocation), its out/ what it writes (PlanOut), beside Home
	// and TMPDIR. An executor writes nothing into Scratch itself.
	Scratch string
	// PromptFile (in/prompt.md) holds Prompt; "" when the driver made no
	// Scratch (an executor that needs a file then makes its own).
	PromptFile string
	// DiffFile (reviewers: in/change.diff) and PlanOut (delegating tasks
	// and planners: out/plan-out.md) lie in Scratch.
	DiffFile string
	PlanOut  string
	// Home is the invocation's home, made by muster: a coder's is its
	// attempt's and reused by its later rounds; every other invocation's
	// is fresh. "": the executor finds one (internal/agentkit.Home).
	Home string
	// SessionID resumes an earlier agent session where the kind supports it.
	SessionID string
	Timeout   time.Duration
	Grace     time.Duration
	// Stall kills the agent when it prints nothing for this long (0: never).
	Stall time.Duration
	// Env holds extra variables for the agent (already allowed by config).
	Env map[string]string
	// Confine, when set, is what the agent's processes may write: the
	// executor starts its program under it (nil: unconfined).
	Confine *Confinement
	// Base is the commit Dir was prepared at (coders); at Round 0 Dir
	// holds exactly Base.
	Base string
	// Source (reviewers) is the coder's clone the change under review
	// was exported from into Dir: an executor that runs the reviewer
	// elsewhere (a fleet worker) records the change from there.
	Source string
	// Gates (coders) are the gates the driver runs on the change next;
	// an executor that runs the agent elsewhere (a fleet worker) runs
	// them there and returns their results in ExecResult.Gates.
	Gates       []GateSpec
	GateTimeout time.Duration
	// Endpoint, when set, is muster's model endpoint for this invocation:
	// the adapter points the agent at it in place of the provider and
	// gives it Endpoint.Key in place of the real key.
	Endpoint *ModelEndpoint `json:"-"`
	// BudgetLeft is what the run may still spend when the invocation
	// starts (nil: no run budget); the model endpoint answers 429 once
	// the invocation has spent it.
	BudgetLeft *Budget `json:"-"`
}

// Slot returns "executor#clone".
func (r *ExecRequest) Slot() string { return Slot(r.Spec.Name, r.Clone) }

// Record is a structured fact an executor reports while it works.
type Record struct {
	Type      string // usage, tool, findings, satisfied, message, notes, session
	Model     string
	Usage     Usage
	Tool      string
	Args      string
	Findings  []Finding
	Text      string
	SessionID string
	// PID (type pid) is the agent's process, which leads its own
	// process group, so that a resume can kill what survived a crash.
	PID int
	// Worker and WorkerClone (type worker) name the fleet worker, and its
	// clone, that took the invocation.
	Worker      string
	WorkerClone int
	// Source (usage) is who counted it (Event.Source).
	Source string
	// Host, Port and Text (type blocked) are a request muster's endpoint
	// or proxy refused, and why.
	Host string
	Port int
	// Winner (type verdict) is the candidate a race's judge names
	// ("executor#clone"); Text is its reason.
	Winner string
	// Problem says what of the record was refused when it was read (a
	// number that is not one); the driver warns with it.
	Problem string
	// FleetSeq is the fleet event stream's sequence of the report that
	// carried the record (a remote invocation's): the driver journals it
	// on the events it makes of the record (Event.FleetSeq).
	FleetSeq uint64
}

// Record types.
const (
	RecUsage     = "usage"
	RecTool      = "tool"
	RecFindings  = "findings"
	RecSatisfied = "satisfied"
	// RecVerdict (Winner, Text: the reason) is a race's judge naming the
	// winning candidate.
	RecVerdict = "verdict"
	RecMessage = "message"
	RecNotes   = "notes"
	RecSession = "session"
	RecPID     = "pid"
	RecWorker  = "worker"
	// RecViolation (Tool: what was asked, Text: the path) says the agent
	// asked muster for a path outside its worktree, and was refused.
	RecViolation = "violation"
	// RecRefused (Worker: the sender, Text: the subject, Tool: why) says a
	// fleet report was refused; it never fails or charges the task.
	RecRefused = "refused"
	// RecBlocked (Host, Port, Text: why) is a request muster's model
	// endpoint or proxy refused the invocation.
	RecBlocked = "blocked"
)

// ExecResult is how an invocation ended.
type ExecResult struct {
	ExitCode  int
	Satisfied bool      // a satisfied record was seen
	Reviewed  bool      // a findings record was seen
	Findings  []Finding // all findings records, concatenated
	// Verdict is a race judge's first verdict record (nil: none).
	Verdict   *Verdict
	SessionID string
	// Tail is the end of the transcript, for failure messages (untrusted).
	Tail string
	// Gates holds the results of ExecRequest.Gates when the executor ran
	// them where the agent ran (nil: it did not; the driver runs them).
	Gates []GateResult
	// Final is the agent's final answer (bounded, untrusted), for kinds
	// that report one: a planner that cannot write a file returns its
	// plan here.
	Final string
}

// Verdict is what a race's judge answered: the winning candidate's slot
// and why (untrusted text).
type Verdict struct {
	Winner string
	Reason string
}

// Executor runs one invocation of an agent (or command) on one clone. It
// calls emit for each record as it arrives, from the calling goroutine or
// another, never concurrently. A non-nil error means the invocation could
// not run or was cut short; an *AgentError classifies it.
type Executor interface {
	Execute(ctx context.Context, req *ExecRequest, emit func(Record)) (*ExecResult, error)
}

// ScratchFree is implemented by executors that never use
// ExecRequest.Scratch; the driver then does not create the directory
// (directory creation dominates the cost of a zero-work task).
type ScratchFree interface{ ScratchFree() }

// FailureClass classifies why an agent invocation failed.
type FailureClass string

// Failure classes, the same for every executor kind.
const (
	FailExit       FailureClass = "exit"        // non-zero exit, nothing more known
	FailRateLimit  FailureClass = "rate_limit"  // retry after RetryAfter
	FailUsageLimit FailureClass = "usage_limit" // no more work on this executor until ResetAt
	FailTransient  FailureClass = "transient"   // server or network: retry with backoff
	FailAuth       FailureClass = "auth"        // no retry
	FailInvalid    FailureClass = "invalid"     // invalid request: no retry
	FailStall      FailureClass = "stall"       // no output for too long: killed
	FailMalformed  FailureClass = "malformed"   // the output stream made no sense
	FailTimeout    FailureClass = "timeout"     // past its timeout: killed
	FailStart      FailureClass = "start"       // could not start (binary missing...)
)

// AgentError is a classified executor failure.
type AgentError struct {
	Class      FailureClass
	ExitCode   int
	RetryAfter time.Duration
	ResetAt    time.Time
	Message    string
}

// Error returns the class and the message.
func (e *AgentError) Error() string {
	if e.Message == "" {
		return string(e.Class)
	}
	return string(e.Class) + ": " + e.Message
}

// Retryable reports whether another attempt may succeed.
func (e *AgentError) Retryable() bool {
	switch e.Class {
	case FailAuth, FailInvalid, FailStart, FailUsageLimit:
		return false
	}
	return true
}

// FileChange is one path of a change. Status is git's letter: A, M, D,
// R (renamed from OldPath), T (type or mode change).
type FileChange struct {
	Path    string `json:"path"`
	OldPath string `json:"old_path,omitempty"`
	Status  string `json:"status"`
}

// Change is what an agent changed in its worktree against the task's base.
type Change struct {
	Files []FileChange
}

// Empty reports whether nothing changed.
func (c *Change) Empty() bool { return c == nil || len(c.Files) == 0 }

// Paths returns every path the change touches (both sides of renames).
func (c *Change) Paths() []string {
	var out []string
	for _, f := range c.Files {
		out = append(out, f.Path)
		if f.OldPath != "" {
			out = append(out, f.OldPath)
		}
	}
	return out
}

// CommitInfo is what a task commit records.
type CommitInfo struct {
	Run      string
	Task     TaskID
	Title    string
	Executor string // "name#clone"
	// Followup, when above 0, is the follow-up this commit answers
	// (trailer Muster-Followup).
	Followup int
}

// Workspace is the git side of a run: the run branch and one worktree
// per executor clone. Methods may be called from several goroutines.
type Workspace interface {
	// Prepare resets the clone's worktree to the run branch tip and
	// cleans it; it returns the worktree's directory and the base commit.
	Prepare(ctx context.Context, slot string) (dir, base string, err error)
	// Change computes everything in dir that differs from base,
	// including commits the agent made itself.
	Change(ctx context.Context, dir, base string) (*Change, error)
	// Violations returns the changed paths that lie outside owns (after
	// normalisation: "..", absolute paths and symlinks pointing outside the
	// repository are always violations), and muster's own files. An empty
	// owns allows any path except muster's own files.
	Violations(ctx context.Context, dir string, change *Change, owns []string) []string
	// Revert restores paths in dir to their state at base.
	Revert(ctx context.Context, dir, base string, paths []string) error
	// Diff returns the change in dir against base as a unified diff.
	Diff(ctx context.Context, dir, base string) (string, error)
	// Summary returns, for the change in dir against base, each file's
	// added and deleted lines and a digest equal for equal changes,
	// without needing the patch (Diff), which only reviews read.
	Summary(ctx context.Context, dir, base string) (ChangeSummary, error)
	// Commit records the whole change in dir as one commit whose parent
	// is base, without moving any branch; it returns the commit.
	Commit(ctx context.Context, dir, base string, info CommitInfo) (string, error)
	// Integrate puts a task commit made on base onto the run branch:
	// fast-forward when the tip is base, else a three-way merge rewritten
	// as one commit on the tip. Conflicts returns the paths in conflict
	// and leaves the branch as it was.
	Integrate(ctx context.Context, commit, base string) (tip string, conflicts []string, err error)
	// Merge computes what Integrate would put on the run branch without
	// moving it: commit itself when the tip is base, else a new commit on
	// the tip holding the three-way merge. Conflicts returns the paths in
	// conflict (merged is then empty).
	Merge(ctx context.Context, commit, base string) (merged string, conflicts []string, err error)
	// Advance moves the run branch to merged if it is still at
	// expectedTip (compare-and-swap); otherwise it fails and moves nothing.
	Advance(ctx context.Context, merged, expectedTip string) error
	// Checkout resets the slot's worktree (made on first use) to commit,
	// cleaned as Prepare does, and returns its directory.
	Checkout(ctx context.Context, slot, commit string) (dir string, err error)
	// Tip returns the run branch's current commit.
	Tip(ctx context.Context) (string, error)
	// Close releases worktrees and locks.
	Close(ctx context.Context) error
}

// ChainMerger is implemented by a Workspace that can build an
// integration batch: a chain of candidate commits above the run branch's
// tip, moved onto the branch by one Advance to the chain's top. Without
// it every commit integrates on its own ([run] max_batch = 1).
type ChainMerger interface {
	// MergeOnto is Merge onto onto instead of the tip: onto is the tip
	// or a commit an earlier MergeOnto of the same batch returned. It
	// returns commit itself when onto is base, else one new commit on
	// onto holding the three-way merge; conflicts leave merged empty.
	MergeOnto(ctx context.Context, onto, commit, base string) (merged string, conflicts []string, err error)
}

// Guard is implemented by a Workspace that watches the user's repository
// around each attempt for what no agent may change there (refs, HEAD,
// index, config, hooks, info, lock files), undoing what it can. Several
// attempts may run at once; a change found while they ran is charged to
// each of them (which one made it cannot be told).
type Guard interface {
	// BeginAttempt marks the start of an attempt on slot.
	BeginAttempt(slot string)
	// CheckAttempt compares the user's repository with the run's
	// snapshot, undoes what it can, and returns the tampering charged to
	// slot's attempt since the last check, each a reason such as
	// "tampered: refs/heads/main moved (undone)".
	CheckAttempt(ctx context.Context, slot string) []string
	// EndAttempt marks the end of the attempt on slot.
	EndAttempt(slot string)
}

// Exporter is implemented by a Workspace that can write the tree of a
// clone's change (tracked files only, as Commit would record them) into
// a fresh directory: reviewers work there, never in the coder's clone.
type Exporter interface {
	// Export writes the tree of dir's change against base into dest,
	// which must not exist yet.
	Export(ctx context.Context, dir, base, dest string) error
}

// RaceKeeper is implemented by a Workspace that keeps race candidates'
// commits as refs (refs/muster/<run>/race/<task>/<attempt>) until muster
// clean, never on the run branch.
type RaceKeeper interface {
	KeepRace(ctx context.Context, task TaskID, attempt int, commit string) error
}

// GateRunner runs gate commands (through sh -c) in a worktree.
type GateRunner interface {
	Run(ctx context.Context, dir string, gate GateSpec, timeout time.Duration) GateResult
}

// Pricer estimates the cost of usage a model reported without a cost.
// known is false when the model has no price.
type Pricer func(model string, u Usage) (micros int64, known bool)

// GateResult is the outcome of one gate command.
type GateResult struct {
	Name     string
	Command  string
	Passed   bool
	ExitCode int
	Output   string // bounded
	Duration time.Duration
	// JUnit holds the JUnit XML reports the gate wrote (GateSpec.JUnit),
	// bounded.
	JUnit string `json:",omitempty"`
	// Blocked are the hosts ("host:port") muster's proxy refused the gate
	// while it ran: a failure after one is an environment error naming
	// them and allow_hosts (muster.BlockedReason), not the task's.
	Blocked []string
}

// Redactor removes secrets (known values, key-shaped strings, URL
// user-info) from text before muster keeps it or passes it on; the
// command line's is internal/redact's. It is safe for concurrent use.
type Redactor interface {
	String(s string) string
}

// SetupStore is implemented by a Workspace that keeps, beside each
// clone's worktree (where no agent writes), a file for what [setup] left
// in the clone, so that a pooled clone is not set up again in the next
// run.
type SetupStore interface {
	SetupStamp(dir string) string
}

package fleet

import (
	"encoding/base32"
	"strconv"
	"strings"
	"time"

	"github.com/muster-run/muster"
)

// Job is one agent invocation sent to the fleet: the orchestrator's
// ExecRequest, with the code named by commits that travel as bundles.
type Job struct {
	Run string `json:"run"`
	ID  string `json:"id"`
	// Gen is the orchestrator's generation: a resume starts a new one,
	// and a worker drops (or cancels) the work of older generations.
	Gen int64 `json:"gen"`
	// Repo names the repository (its root commit); Start is the commit
	// the clone must hold when the agent starts.
	Repo  string `json:"repo"`
	Start string `json:"start"`

	Task      *muster.Task     `json:"task"`
	Executor  string           `json:"executor"`
	Role      muster.Role      `json:"role"`
	Attempt   int              `json:"attempt"`
	Round     int              `json:"round"`
	Authority muster.Authority `json:"authority"`
	Model     string           `json:"model,omitempty"`
	Prompt    string           `json:"prompt"`
	SessionID string           `json:"session_id,omitempty"`
	Timeout   time.Duration    `json:"timeout,omitempty"`
	Grace     time.Duration    `json:"grace,omitempty"`
	Stall     time.Duration    `json:"stall,omitempty"`
	// Diff is the change under review (reviewers).
	Diff string `json:"diff,omitempty"`
	// PlanOut asks for the delegating task's plan file back.
	PlanOut bool `json:"plan_out,omitempty"`
	// Gates run in the clone after the agent (coders).
	Gates       []muster.GateSpec `json:"gates,omitempty"`
	GateTimeout time.Duration     `json:"gate_timeout,omitempty"`
	// Setup are the run's [setup] steps (coders): the worker runs them
	// in the clone before the agent and again before the gates, and the
	// agent sees their outputs read-only.
	Setup []muster.SetupStep `json:"setup,omitempty"`
	// NotOn names workers that may not take the job (a reviewer's job
	// never runs where its change was made).
	NotOn []string `json:"not_on,omitempty"`
	// RunTTL is how long the worker keeps the job running once the run's
	// presence lapses ([fleet] run_ttl): a resume within it adopts the
	// job. 0: PresenceTTL (an orchestrator of an earlier version).
	RunTTL time.Duration `json:"run_ttl,omitempty"`
	// Nonce is a secret of the job's message, which only the workers
	// that may serve its executor can read (their consumers, their own
	// inboxes): every report carries it back, so a worker that never
	// received the job cannot claim it or send its result.
	Nonce string `json:"nonce,omitempty"`
	// BudgetLeftUSDMicros and BudgetLeftTokens are what was left of the
	// run's budget when the job was sent (0, or absent from an earlier
	// orchestrator's job: no limit): the worker's model endpoint answers
	// 429 once the job's own responses spend it.
	BudgetLeftUSDMicros int64 `json:"budget_left_usd_micros,omitempty"`
	BudgetLeftTokens    int64 `json:"budget_left_tokens,omitempty"`
}

// budgetLeft is the job's budget left as a request's (nil: none).
func (j *Job) budgetLeft() *muster.Budget {
	b := muster.Budget{USDMicros: max(j.BudgetLeftUSDMicros, 0), Tokens: max(j.BudgetLeftTokens, 0)}
	if b.IsZero() {
		return nil
	}
	return &b
}

// Kinds of Report.
const (
	RepClaim    = "claim"    // a worker took the job (Delivery is its lease epoch)
	RepRecord   = "record"   // an executor record
	RepResult   = "result"   // the invocation ended
	RepHandback = "handback" // the worker stopped and gave the job back
	RepAlive    = "alive"    // the lease holder still works on the job
	RepChunk    = "chunk"    // a piece of the result's bundle (Seq: 1, 2, ...)
)

// Report is what a worker says about a job, on muster.ev.<run>.<job>.
// Worker and Delivery (the JetStream delivery count of the job's
// message: the lease epoch) say which lease it comes under; the
// orchestrator takes only reports of the lease it accepted.
type Report struct {
	Kind    muster.ExecKind `json:"kind"`
	Job     string          `json:"job"`
	Task    muster.TaskID   `json:"task"`
	Attempt int             `json:"attempt"`
	Worker  string          `json:"worker"`
	// Msg is the job message's stream sequence and Delivery its delivery
	// count: together the lease epoch.
	Msg      uint64 `json:"msg"`
	Delivery uint64 `json:"delivery"`
	Clone    int    `json:"clone,omitempty"`
	Seq      int    `json:"seq,omitempty"`
	// Nonce is the job's (Job.Nonce).
	Nonce string `json:"nonce,omitempty"`

	Record *muster.Record `json:"record,omitempty"`

	// Result fields: Commit is the clone's tree on Start as a commit
	// (empty: nothing changed). BundleData holds its bundle, or (a
	// chunk report) one piece of it; a result sent in Chunks chunks
	// says how many, and the SHA-256 of the whole (BundleSum).
	Commit     string              `json:"commit,omitempty"`
	BundleData []byte              `json:"bundle_data,omitempty"`
	Chunks     int                 `json:"chunks,omitempty"`
	BundleSum  string              `json:"bundle_sum,omitempty"`
	Exec       *muster.ExecResult  `json:"exec,omitempty"`
	Error      *muster.AgentError  `json:"error,omitempty"`
	Fail       string              `json:"fail,omitempty"` // the worker could not run the job (not the agent's fault)
	Gates      []muster.GateResult `json:"gates,omitempty"`
	Plan       string              `json:"plan,omitempty"` // a delegating task's plan file

	// subject is the subject the report came on (set by the orchestrator
	// as it reads it, never sent), sender its worker token, and
	// streamSeq its sequence in the events stream.
	subject, sender string
	streamSeq       uint64
}

// holder names a lease: "worker/msg.delivery".
func (r *Report) holder() string {
	return r.Worker + "/" + strconv.FormatUint(r.Msg, 10) + "." + strconv.FormatUint(r.Delivery, 10)
}

// BundleRequest asks the orchestrator for the objects a clone lacks.
// Nonce is the job's: only a worker that received the job gets its
// code, and only in its own inbox.
type BundleRequest struct {
	Job    string   `json:"job"`
	Worker string   `json:"worker"`
	Nonce  string   `json:"nonce,omitempty"`
	Want   string   `json:"want"`
	Have   []string `json:"have,omitempty"`
}

// BundleReply names the object holding the bundle (or why not).
type BundleReply struct {
	Object string `json:"object,omitempty"`
	// Data holds a small bundle itself (then Object is empty).
	Data  []byte `json:"data,omitempty"`
	Error string `json:"error,omitempty"`
}

var tokenEnc = base32.HexEncoding.WithPadding(base32.NoPadding)

// token makes a name safe as one subject token (executor names may hold dots).
func token(name string) string { return strings.ToLower(tokenEnc.EncodeToString([]byte(name))) }

func taskSubject(run, executor string) string { return "muster.task." + run + "." + token(executor) }
func taskFilter(executor string) string       { return "muster.task.*." + token(executor) }
func consumerName(executor string) string     { return "exec_" + token(executor) }
func eventSubject(run, worker, job string) string {
	return "muster.ev." + run + "." + worker + "." + job
}
func bundleSubject(run string) string { return "muster.bundle." + run }
func leaseKey(run, job string) string { return run + "." + job }
func genKey(run string) string        { return run + ".gen" }
func runKey(run string) string        { return "r." + run }

// inlineMax is the largest bundle sent inside a message (a message stays
// well under any server's default 1 MB payload limit): a larger start
// bundle goes through the object store, which only orchestrators write,
// and a larger result in chunks (results.go).
const inlineMax = 256 << 10

// Lease values besides a holder ("worker/delivery").
const (
	LeaseDone   = "done"
	LeaseCancel = "cancel"
)

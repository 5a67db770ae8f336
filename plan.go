package muster

import (
	"regexp"
	"sync"
	"time"
)

// TaskID names a task within a plan. It matches IDPattern.
type TaskID string

// IDPattern is the shape of a valid task ID, compiled on first use
// (every start of muster, a sandbox's stage one among them, initialises
// this package).
var IDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// Authority is what a task's agent may do.
type Authority string

// Authorities, from least to most.
const (
	AuthorityRead  Authority = "read"
	AuthorityWrite Authority = "write"
	AuthorityShell Authority = "shell"
)

// Task kinds.
const (
	KindAgent = "agent" // an executor clone does the work (default)
	KindCode  = "code"  // the Run command is a deterministic step
)

// Role is what an executor clone is for.
type Role string

// Roles of executor clones.
const (
	RoleCoder    Role = "coder"
	RoleReviewer Role = "reviewer"
	// RolePlanner clones write plans from a goal (muster plan).
	RolePlanner Role = "planner"
)

// Plan is a parsed plan file: a brief and its tasks in plan order.
type Plan struct {
	Title  string  `json:"title,omitempty"`
	Brief  string  `json:"brief,omitempty"`
	Source string  `json:"source,omitempty"` // path of the plan file, for messages
	Tasks  []*Task `json:"tasks"`
}

// Budget limits what a task may spend. Zero fields are unlimited.
type Budget struct {
	USDMicros int64 `json:"usd_micros,omitempty"` // micro-dollars
	Tokens    int64 `json:"tokens,omitempty"`
}

// IsZero reports whether the budget sets no limit.
func (b Budget) IsZero() bool { return b.USDMicros == 0 && b.Tokens == 0 }

// LoopSpec is a bounded check/repair loop on a task (Loop: key).
type LoopSpec struct {
	Check string `json:"check"`         // command whose exit 0 means resolved
	Max   int    `json:"max,omitempty"` // attempts, 1..5
}

// Task is one unit of work in a plan.
type Task struct {
	ID        TaskID        `json:"id"`
	Title     string        `json:"title"`
	Done      bool          `json:"done,omitempty"` // marked [x]: not run
	After     []TaskID      `json:"after,omitempty"`
	Owns      []string      `json:"owns,omitempty"`
	Reads     []string      `json:"reads,omitempty"`
	Gates     []string      `json:"gates,omitempty"`
	Executor  string        `json:"executor,omitempty"`
	Model     string        `json:"model,omitempty"`
	Role      Role          `json:"role,omitempty"`
	Kind      string        `json:"kind,omitempty"`
	Run       string        `json:"run,omitempty"`
	Satisfies []string      `json:"satisfies,omitempty"`
	Timeout   time.Duration `json:"timeout,omitempty"`
	Retries   int           `json:"retries,omitempty"`
	Review    string        `json:"review,omitempty"`
	Authority Authority     `json:"authority,omitempty"`
	Budget    Budget        `json:"budget,omitempty"`
	Delegates bool          `json:"delegates,omitempty"`
	// DelegateDepth is N of Delegates: N when N is 2 or more (0 with
	// Delegates: yes, which is 1): how many levels of delegation the
	// task may start; a task it delegates may carry at most N-1.
	DelegateDepth int       `json:"delegate_depth,omitempty"`
	Loop          *LoopSpec `json:"loop,omitempty"`
	// Race is N of Race: N: the task runs N candidate attempts at once
	// and one winner lands (0: no race). RaceFirst is Race: first: the
	// first candidate that passes its gates and review wins.
	Race      int  `json:"race,omitempty"`
	RaceFirst bool `json:"race_first,omitempty"`
	// Candidates are the executors a race runs on (Executor: a, b, c,
	// accepted only with Race:); empty: the crew's coders.
	Candidates []string `json:"candidates,omitempty"`
	Prompt     string   `json:"prompt,omitempty"`
	// Parent is the delegating task that spliced this one in, if any.
	Parent TaskID `json:"parent,omitempty"`

	// Line is the 1-based line of the task's heading in its source file;
	// KeyLines maps a lower-case field key to the line of its first use;
	// ItemLines a list key (after, owns, reads, satisfies, gate) to the
	// line of each of its items, in order: the key may repeat.
	Line      int              `json:"line,omitempty"`
	KeyLines  map[string]int   `json:"-"`
	ItemLines map[string][]int `json:"-"`
}

// DelegationDepth is the levels of delegation the task may start: 0
// when it does not delegate, 1 for Delegates: yes, N for Delegates: N.
func (t *Task) DelegationDepth() int {
	switch {
	case !t.Delegates:
		return 0
	case t.DelegateDepth > 1:
		return t.DelegateDepth
	}
	return 1
}

// Racing reports whether the task runs as a race (Race: N or Race: first).
func (t *Task) Racing() bool { return t.Race > 0 || t.RaceFirst }

// EffectiveKind returns the task's kind, defaulting to agent.
func (t *Task) EffectiveKind() string {
	if t.Kind == "" {
		return KindAgent
	}
	return t.Kind
}

// EffectiveAuthority returns the task's authority, defaulting to write.
func (t *Task) EffectiveAuthority() Authority {
	if t.Authority == "" {
		return AuthorityWrite
	}
	return t.Authority
}

// EffectiveRole returns the role of clone the task needs, defaulting to coder.
func (t *Task) EffectiveRole() Role {
	if t.Role == "" {
		return RoleCoder
	}
	return t.Role
}

// LineOf returns the line of a field key, or the heading's line.
func (t *Task) LineOf(key string) int {
	if l, ok := t.KeyLines[key]; ok {
		return l
	}
	return t.Line
}

// ItemLine returns the line of the i-th item of a list key, or the
// key's first line when it is not known (a YAML list, a spliced task).
func (t *Task) ItemLine(key string, i int) int {
	if ls := t.ItemLines[key]; i >= 0 && i < len(ls) {
		return ls[i]
	}
	return t.LineOf(key)
}

// Task returns the task with the given ID, or nil.
func (p *Plan) Task(id TaskID) *Task {
	for _, t := range p.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Package runview folds a run's journal events into the state that the
// views draw: the live terminal view (tui) and the HTML report
// (htmlreport). It imports only the root package, so both adapters can
// share it without importing each other.
//
// Text in the fold (titles, reasons, warnings, gate output) is kept as
// the journal has it: it is untrusted, and each view makes it safe for
// its own medium when it draws it.
package runview

import (
	"time"

	"github.com/muster-run/muster"
)

// Task is what the views know of one task, folded from events.
type Task struct {
	ID    muster.TaskID
	Title string // untrusted
	After []muster.TaskID
	State muster.TaskState
	// Attempt is the latest attempt's number.
	Attempt int
	// Slot is the coder clone of the latest attempt.
	Slot string
	// Worker is "worker/executor#clone" when the latest attempt's coder
	// ran on a fleet worker ("" locally; untrusted).
	Worker string
	// Phase is the current phase (agent, gates, review, integrating, …),
	// "" once the task ended.
	Phase string
	// Round is the current fix round (0: the first pass).
	Round int
	// FixRounds counts the fix rounds across attempts.
	FixRounds int
	Start     time.Time // the first attempt's start
	End       time.Time // the latest end
	Usage     muster.Usage
	Commit    string
	Paths     []string
	Gates     []GateRun  // every gate run, in order
	Fixes     []FixRound // every fix round, in order
	Reviews   []Review   // every review, in order
	Reason    string     // why it ended (untrusted), "" while it runs
}

// GateRun is one run of a gate.
type GateRun struct {
	Name     string
	Passed   bool
	Baseline string // "pass", "fail" (it fails on the base too), "" (not computed)
	// NotCharged: a failure that is not the task's (Event.NotCharged).
	NotCharged bool
	Time       time.Time
	Output     string // untrusted
}

// FixRound is one fix round.
type FixRound struct {
	Round  int
	Reason string // untrusted
	Time   time.Time
}

// Review is one review of a task.
type Review struct {
	Slot     string
	Round    int // fix rounds before it
	Time     time.Time
	Findings []muster.Finding
}

// LatestGates returns the task's gates in the order they first ran, with
// the latest result of each.
func (t *Task) LatestGates() (names []string, passed map[string]bool) {
	passed = map[string]bool{}
	for _, g := range t.Gates {
		if _, ok := passed[g.Name]; !ok {
			names = append(names, g.Name)
		}
		passed[g.Name] = g.Passed
	}
	return names, passed
}

// Findings returns the number of findings of the latest review.
func (t *Task) Findings() int {
	if len(t.Reviews) == 0 {
		return 0
	}
	return len(t.Reviews[len(t.Reviews)-1].Findings)
}

// Clone is one executor clone ("executor#n").
type Clone struct {
	Slot  string
	Role  muster.Role
	Task  muster.TaskID // current task, "" when idle
	Since time.Time     // when it took the current task
	Work  muster.Usage  // spent on the current task by this clone
	Total muster.Usage  // spent by this clone in the run
	// Worker is "worker/executor#clone" while a fleet worker does the
	// current task ("" locally; untrusted).
	Worker string
}

// Name is how views show the clone: the fleet worker's clone doing its
// task, else its slot.
func (c *Clone) Name() string {
	if c.Worker != "" && c.Task != "" {
		return c.Worker
	}
	return c.Slot
}

// Where is how views show where the task's latest attempt ran: the fleet
// worker's clone, else the slot.
func (t *Task) Where() string {
	if t.Worker != "" {
		return t.Worker
	}
	return t.Slot
}

// Blocked is one Blocked event: who was refused what.
type Blocked struct {
	Task    muster.TaskID
	Attempt int
	Slot    string
	Host    string // host:port
	Reason  string // untrusted
	Time    time.Time
}

// Run is the fold of a run's events.
type Run struct {
	// gaps are the stretches no muster process ran the run (Active).
	gaps                   muster.GapTracker
	ID, Plan, Branch, Base string
	Config                 *muster.Config // of the RunStarted
	// Budget is the run's budget in micro-dollars (0: none), from the
	// RunStarted's configuration or a later RunResumed's.
	Budget int64
	Start  time.Time
	End    time.Time
	// State is "" while the run runs, else a muster.Run* state.
	State string
	Usage muster.Usage
	// Warnings are the Warning events' messages (untrusted).
	Warnings []string

	// Paces are the rate-limited credentials' paces (muster.NextPace),
	// and RateLimits counts the rate limits by executor.
	Paces      map[string]muster.Pace
	RateLimits map[string]int

	// Blocked are the requests muster's endpoint or proxy refused, in
	// journal order (each host once per attempt).
	Blocked []Blocked

	Order  []muster.TaskID // tasks in the order first seen
	Tasks  map[muster.TaskID]*Task
	Clones []*Clone // in configuration order, then first seen

	// Races are the races of raced tasks (Race:), in start order;
	// racing the one under way of each task.
	Races  []*Race
	racing map[muster.TaskID]*Race

	slots map[string]*Clone
}

// New returns an empty fold.
func New() *Run {
	return &Run{Tasks: map[muster.TaskID]*Task{}, slots: map[string]*Clone{}, Paces: map[string]muster.Pace{}, RateLimits: map[string]int{}}
}

// Fold folds events into a new Run.
func Fold(events []muster.Event) *Run {
	r := New()
	for i := range events {
		r.Apply(&events[i])
	}
	return r
}

// Task returns the task with the id, adding it when unknown (an event may
// name a task not seen planned, e.g. when a view attached late).
func (r *Run) Task(id muster.TaskID) *Task {
	if t, ok := r.Tasks[id]; ok {
		return t
	}
	t := &Task{ID: id, State: muster.StatePending}
	r.Tasks[id] = t
	r.Order = append(r.Order, id)
	return t
}

// Clone returns the clone of a slot, adding it when new.
func (r *Run) Clone(slot string) *Clone {
	if c, ok := r.slots[slot]; ok {
		return c
	}
	c := &Clone{Slot: slot}
	r.slots[slot] = c
	r.Clones = append(r.Clones, c)
	return c
}

// Counts returns the tasks succeeded, running and failed, and the total.
func (r *Run) Counts() (done, running, failed, total int) {
	for _, id := range r.Order {
		switch r.Tasks[id].State {
		case muster.StateSucceeded:
			done++
		case muster.StateRunning:
			running++
		case muster.StateFailed:
			failed++
		}
	}
	return done, running, failed, len(r.Order)
}

// Blocking returns how many of the findings earn a fix round.
func Blocking(findings []muster.Finding) int {
	n := 0
	for _, f := range findings {
		if f.Blocking() {
			n++
		}
	}
	return n
}

package engine

import (
	"fmt"
	"time"

	"github.com/muster-run/muster"
)

// CodeExecutor is the built-in executor that runs Kind: code tasks.
const CodeExecutor = "code"

// ActionKind says what an Action asks the driver to do.
type ActionKind int

// Action kinds.
const (
	// ActStart leases Executor#Clone and starts attempt Attempt of Task.
	ActStart ActionKind = iota
	// ActSkip marks Task skipped with Reason.
	ActSkip
	// ActFinish ends the run with State.
	ActFinish
	// ActCancel marks a task that has not started cancelled with Reason
	// (the budget cannot cover it).
	ActCancel
)

// Action is one decision.
type Action struct {
	Kind ActionKind
	Task muster.TaskID
	// Executor, Clone (from 1), Role and Attempt (from 1) are ActStart's.
	Executor string
	Clone    int
	Role     muster.Role
	Attempt  int
	// Uncharged (ActStart) is how many of the task's earlier attempts
	// ended in a rate limit and do not count against its Retries.
	Uncharged int
	// Reason is why ActSkip or ActCancel ends the task.
	Reason string
	// Cause is why ActCancel cancels the task.
	Cause muster.CancelCause
	// State is ActFinish's run state (muster.RunSucceeded or RunFailed).
	State string
	// Race (ActStart of a raced task) lists the candidates to start,
	// each on its own clone (Executor and Clone are the first's, Attempt
	// the last's); RaceSize is the race's N, RaceFirst Race: first,
	// RaceRound the task's race count (Retries apply to races) and Short
	// says why fewer candidates than N start ("": all of them).
	Race      []muster.RaceCandidate
	RaceSize  int
	RaceFirst bool
	RaceRound int
	Short     string
}

// Racing reports whether the action starts a race.
func (a Action) Racing() bool { return a.RaceSize > 0 }

// String describes the action for logs and test failures.
func (a Action) String() string {
	switch a.Kind {
	case ActStart:
		return fmt.Sprintf("start %s#%d on %s", a.Task, a.Attempt, muster.Slot(a.Executor, a.Clone))
	case ActSkip:
		return fmt.Sprintf("skip %s: %s", a.Task, a.Reason)
	case ActCancel:
		return fmt.Sprintf("cancel %s: %s", a.Task, a.Reason)
	}
	return "finish " + a.State
}

// Input is what Decide needs besides the state.
type Input struct {
	Now time.Time
}

// Decision is Decide's answer: actions to take now, and a time to ask
// again even if nothing happens (zero: only when an event arrives).
type Decision struct {
	Actions []Action
	WakeAt  time.Time
	// Waiting, when set, says for people what the run waits for while
	// nothing runs: a fleet run's ready tasks that no executor of the
	// crew can run, until a worker serving one joins (crew.go).
	Waiting string
}

// Decide returns what to do next. It never mutates s: the driver applies
// the events that carry each action out, and asks again.
func Decide(s *State, in Input) Decision {
	var d Decision
	if s.RunState != muster.RunRunning || s.Config == nil {
		return d
	}
	// Tasks whose dependency failed or was skipped are skipped, naming it.
	for _, id := range s.doomedInOrder() {
		t := s.Tasks[id]
		if t.State != muster.StatePending {
			continue
		}
		if dep, why := s.blockedBy(t); dep != "" {
			d.Actions = append(d.Actions, Action{Kind: ActSkip, Task: id, Reason: fmt.Sprintf("dependency %s %s", dep, why)})
		}
	}
	if len(d.Actions) > 0 {
		// Apply the skips first: they may cascade, and change nothing else.
		return d
	}
	// Coders and reviewers at work, commits waiting for integration with
	// their clones given back, or a race deciding (its candidates'
	// clones may all be free while its winner is chosen).
	running := s.Working() || s.raceUnderWay()
	if s.Stopped != "" {
		if running {
			return d
		}
		for _, id := range s.Order {
			if t := s.Tasks[id]; !t.Terminal() {
				d.Actions = append(d.Actions, Action{Kind: ActSkip, Task: id,
					Reason: fmt.Sprintf("not started: the run stopped after %s failed", s.Stopped)})
			}
		}
		if len(d.Actions) == 0 {
			d.Actions = append(d.Actions, Action{Kind: ActFinish, State: s.finalState()})
		}
		return d
	}
	var broke string
	d.Actions, d.WakeAt, broke = s.starts(in.Now)
	if len(d.Actions) > 0 || running {
		return d
	}
	if broke != "" {
		// Nothing runs and the budget covers nothing that could start:
		// the run ends; every task not done is cancelled for the budget
		// (a resume with a raised budget runs them).
		for _, id := range s.Order {
			if t := s.Tasks[id]; !t.Terminal() {
				d.Actions = append(d.Actions, Action{Kind: ActCancel, Task: id, Reason: broke, Cause: muster.CauseBudget})
			}
		}
		return d
	}
	if !s.Done() {
		if !d.WakeAt.IsZero() {
			return d // an executor is paused; wait for it
		}
		if d.WakeAt, d.Waiting = s.awaitingJoin(in.Now); !d.WakeAt.IsZero() {
			return d
		}
		if d.Actions = s.stuck(); len(d.Actions) > 0 {
			return d
		}
	}
	d.Actions = append(d.Actions, Action{Kind: ActFinish, State: s.finalState()})
	return d
}

// stuck says why the tasks left cannot start when nothing runs and
// nothing can start, instead of hanging: ready tasks no executor can run
// are skipped, and tasks that wait on a cancelled task (a task budget)
// are skipped, or cancelled when the budget stopped that task.
func (s *State) stuck() []Action {
	var acts []Action
	for _, id := range s.ready {
		acts = append(acts, Action{Kind: ActSkip, Task: id,
			Reason: "no executor in the crew can run it (" + s.needs(s.Tasks[id].Task) + ")" + s.joinWaitPassed()})
	}
	for _, id := range s.Order {
		t := s.Tasks[id]
		if t.State != muster.StatePending {
			continue
		}
		dep, why := s.blockedBy(t)
		if dep == "" {
			continue
		}
		if dt := s.Tasks[dep]; dt.State == muster.StateCancelled && dt.Cause == muster.CauseBudget {
			// Work stopped by the budget: cancelled too, for resume.
			acts = append(acts, Action{Kind: ActCancel, Task: id, Cause: muster.CauseBudget,
				Reason: "budget: not started: dependency " + string(dep) + " was stopped by the budget"})
			continue
		}
		acts = append(acts, Action{Kind: ActSkip, Task: id, Reason: fmt.Sprintf("dependency %s %s", dep, why)})
	}
	return acts
}

func (s *State) blockedBy(t *TaskState) (muster.TaskID, string) {
	for _, dep := range t.Task.After {
		dt := s.Tasks[dep]
		switch dt.State {
		case muster.StateFailed:
			return dep, "failed"
		case muster.StateSkipped:
			return dep, "was skipped"
		case muster.StateCancelled:
			return dep, "was cancelled (" + dt.Reason + ")"
		}
	}
	return "", ""
}

func (s *State) finalState() string {
	for _, t := range s.Tasks {
		if t.State != muster.StateSucceeded {
			return muster.RunFailed
		}
	}
	return muster.RunSucceeded
}

func (s *State) needs(t *muster.Task) string {
	if t.EffectiveKind() == muster.KindCode {
		return "code"
	}
	need := "role " + string(t.EffectiveRole())
	if t.Executor != "" {
		need = "executor " + t.Executor
	}
	if t.Model != "" {
		need += ", model " + t.Model
	}
	return need
}

// capacity returns how many clones of an executor may work at once.
func capacity(e *muster.ExecutorSpec) int { return e.Capacity() }

// CodeClones is how many Kind: code tasks may run at once.
func CodeClones(c *muster.Config) int {
	if c.Run.MaxParallel > 0 {
		return c.Run.MaxParallel
	}
	return 4
}

// decision is what one call of starts has taken so far: its clones,
// coders, writers and reservations, on top of the state's.
type decision struct {
	s         *State
	now       time.Time
	acts      []Action
	wake      time.Time
	broke     string // why the budget refused a ready task
	resM      int64  // reserved: running tasks and those started here
	resK      int64
	coders    int
	writers   int
	taken     map[string]bool
	credTaken map[string]int // starts of this decision, by credential
	// spare counts free clones in the whole crew, to stop early when the
	// crew is busy however long the ready list is.
	spare, codeSpare int
}

func (s *State) starts(now time.Time) ([]Action, time.Time, string) {
	cfg := s.Config
	d := &decision{s: s, now: now, coders: s.coders, writers: s.writers, taken: map[string]bool{}, credTaken: map[string]int{}}
	if cfg.Run.BudgetUSDMicros > 0 || cfg.Run.BudgetTokens > 0 {
		d.resM, d.resK = s.Reserved()
	}
	if s.codeTasks > 0 {
		d.codeSpare = CodeClones(cfg) - s.leasedBy(CodeExecutor)
	}
	for _, e := range cfg.Executors {
		d.spare += capacity(e) - s.leasedBy(e.Name)
	}
	for _, id := range s.ready {
		if cfg.Run.MaxParallel > 0 && d.coders >= cfg.Run.MaxParallel || d.spare <= 0 && d.codeSpare <= 0 {
			break
		}
		t := s.Tasks[id]
		if now.Before(t.RetryAt) {
			// Backing off after a failed attempt (RetryBackoff).
			d.wakeAt(t.RetryAt)
			continue
		}
		writes := t.Task.EffectiveAuthority() != muster.AuthorityRead
		if cfg.Run.Writers > 0 && writes && d.writers >= cfg.Run.Writers {
			continue
		}
		if n, first := RaceOf(t.Task, cfg); n > 0 {
			if !d.race(t, n, first) {
				break // the race waits for the crew; nothing after it starts
			}
			continue
		}
		if why := s.budgetRefusal(t.Task, d.resM, d.resK); why != "" {
			if d.broke == "" {
				d.broke = why
			}
			continue
		}
		pick, pickClone := d.pick(t)
		if pick == "" {
			continue
		}
		d.take(t, pick, pickClone)
		d.acts = append(d.acts, Action{Kind: ActStart, Task: id, Executor: pick, Clone: pickClone,
			Role: t.Task.EffectiveRole(), Attempt: t.Attempts + 1, Uncharged: min(t.Uncharged, MaxUncharged)})
	}
	return d.acts, d.wake, d.broke
}

func (d *decision) wakeAt(at time.Time) {
	if d.wake.IsZero() || at.Before(d.wake) {
		d.wake = at
	}
}

func (d *decision) busy(exec string, clone int) bool {
	slot := muster.Slot(exec, clone)
	_, leased := d.s.Leases[slot]
	return leased || d.taken[slot]
}

// free returns how many clones of exec (up to limit) are free and the
// first of them.
func (d *decision) free(exec string, limit int) (int, int) {
	n, first := 0, 0
	for c := 1; c <= limit; c++ {
		if !d.busy(exec, c) {
			if first == 0 {
				first = c
			}
			n++
		}
	}
	// Clones above the limit (max_concurrent) that are still leased
	// count against it.
	return n - d.s.leasedAbove(exec, limit), first
}

// usable says whether an executor takes work now (not paused by a usage
// limit, its credential not held by a pace), noting when to ask again.
func (d *decision) usable(e *muster.ExecutorSpec) bool {
	if until, ok := d.s.BlockedUntil[e.Name]; ok && d.now.Before(until) {
		d.wakeAt(until)
		return false
	}
	if held, at := d.s.paced(e.Credential(), d.now, d.credTaken[e.Credential()]); held {
		d.wakeAt(at)
		return false
	}
	return true
}

// pick chooses the executor and clone of a task's next attempt: the
// executor with the most free clones among those that may run it.
func (d *decision) pick(t *TaskState) (string, int) {
	cfg := d.s.Config
	if t.Task.EffectiveKind() == muster.KindCode {
		if n, c := d.free(CodeExecutor, CodeClones(cfg)); n > 0 {
			return CodeExecutor, c
		}
		return "", 0
	}
	var pick string
	pickClone, pickFree := 0, 0
	role := t.Task.EffectiveRole()
	for _, e := range cfg.Executors {
		if t.Task.Executor != "" && e.Name != t.Task.Executor {
			continue
		}
		if t.Task.Executor == "" && !e.HasRole(role) {
			continue
		}
		if !e.OffersModel(t.Task.Model) || !d.usable(e) {
			continue
		}
		if n, c := d.free(e.Name, capacity(e)); n > pickFree {
			pick, pickClone, pickFree = e.Name, c, n
		}
	}
	return pick, pickClone
}

// take counts a clone this decision starts a coder on.
func (d *decision) take(t *TaskState, exec string, clone int) {
	d.taken[muster.Slot(exec, clone)] = true
	if exec == CodeExecutor {
		d.codeSpare--
	} else {
		d.spare--
		d.credTaken[d.s.Config.Executor(exec).Credential()]++
	}
	d.coders++
	if t.Task.EffectiveAuthority() != muster.AuthorityRead {
		d.writers++
	}
	m, k := d.s.Expected(t.Task)
	d.resM, d.resK = d.resM+m, d.resK+k
}

func (s *State) leasedBy(exec string) int {
	n := 0
	for _, l := range s.Leases {
		if l.Executor == exec {
			n++
		}
	}
	return n
}

func (s *State) leasedAbove(exec string, limit int) int {
	n := 0
	for _, l := range s.Leases {
		if l.Executor == exec && l.Clone > limit {
			n++
		}
	}
	return n
}

// FreeSlot returns a free clone for a role (reviewers, for instance),
// preferring executors other than avoid; ok is false when none is free.
func FreeSlot(s *State, role muster.Role, avoid string, now time.Time) (exec string, clone int, ok bool) {
	return freeSlot(s, role, func(name string) bool { return name == avoid }, now)
}

// freeSlot is the first free clone of the role whose executor avoided
// does not name, else the first free one of any; ok is false when no clone
// of the role is free.
func freeSlot(s *State, role muster.Role, avoided func(string) bool, now time.Time) (exec string, clone int, ok bool) {
	var fallbackExec string
	var fallbackClone int
	for _, e := range s.Config.Executors {
		if !e.HasRole(role) {
			continue
		}
		if until, blocked := s.BlockedUntil[e.Name]; blocked && now.Before(until) {
			continue
		}
		if p, ok := s.Paces[e.Credential()]; ok && now.Before(p.Until) {
			continue
		}
		for c := 1; c <= capacity(e); c++ {
			if _, leased := s.Leases[muster.Slot(e.Name, c)]; leased {
				continue
			}
			if !avoided(e.Name) {
				return e.Name, c, true
			}
			if fallbackExec == "" {
				fallbackExec, fallbackClone = e.Name, c
			}
			break
		}
	}
	return fallbackExec, fallbackClone, fallbackExec != ""
}

// FreeClone finds a clone of executor exec that no one holds: prefer
// when it is free, else the lowest free one. A coder that gave its clone
// back while its commit waited for integration leases one this way for a
// fix round (its executor, and its own clone when it can).
func FreeClone(s *State, exec string, prefer int, now time.Time) (clone int, ok bool) {
	n := 0
	if exec == CodeExecutor {
		n = CodeClones(s.Config)
	} else if e := s.Config.Executor(exec); e != nil {
		if until, blocked := s.BlockedUntil[e.Name]; blocked && now.Before(until) {
			return 0, false
		}
		if p, ok := s.Paces[e.Credential()]; ok && now.Before(p.Until) {
			return 0, false
		}
		n = capacity(e)
	}
	free := func(c int) bool {
		_, leased := s.Leases[muster.Slot(exec, c)]
		return c >= 1 && c <= n && !leased
	}
	if free(prefer) {
		return prefer, true
	}
	for c := 1; c <= n; c++ {
		if free(c) {
			return c, true
		}
	}
	return 0, false
}

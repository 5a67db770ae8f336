package tui

import (
	"time"

	"github.com/muster-run/muster"
)

// maxMessages is how many of a task's latest agent messages are kept.
const maxMessages = 50

// maxTail is how many formatted events the scrolling tail keeps.
const maxTail = 200

// task is what the view knows of one task, folded from events.
type task struct {
	ID      muster.TaskID
	Title   string
	After   []muster.TaskID
	State   string // muster.State*
	Attempt int
	Slot    string // clone working on it now, or last
	Phase   string // agent, gates, review, integrating
	Round   int    // fix round (0: first pass)
	Started time.Time
	Ended   time.Time
	Usage   muster.Usage
	Commit  string
	Paths   []string
	Gates   map[string]bool // latest result per gate
	Gated   []string        // gate names in first-run order
	Finds   int             // review findings, latest review
	Reason  string
	Msgs    []string // latest agent messages, sanitized, oldest first
}

// lane is one executor clone.
type lane struct {
	Slot  string
	Role  string
	Task  muster.TaskID // current task, "" when idle
	Since time.Time     // when it took the current task
	Work  muster.Usage  // spent on the current task by this clone
	Total muster.Usage  // spent by this clone in the run
}

// state is the fold of a run's events the view draws.
type state struct {
	Run      string
	Plan     string
	Branch   string
	Started  time.Time
	Finished time.Time
	RunState string // "" while running, else muster.Run*
	Budget   int64  // micro-dollars, 0: none
	Total    muster.Usage

	order []muster.TaskID
	tasks map[muster.TaskID]*task
	lanes []*lane
	slots map[string]*lane
	tail  []string
	last  time.Time // time of the latest event
}

func newState() *state {
	return &state{tasks: map[muster.TaskID]*task{}, slots: map[string]*lane{}}
}

// lane returns the lane of a slot, adding it when new.
func (s *state) lane(slot string) *lane {
	if l, ok := s.slots[slot]; ok {
		return l
	}
	l := &lane{Slot: slot}
	s.slots[slot] = l
	s.lanes = append(s.lanes, l)
	return l
}

// task returns the task with the id, adding it when unknown (an event
// may name a task the view has not seen planned, e.g. when attached late).
func (s *state) task(id muster.TaskID) *task {
	if t, ok := s.tasks[id]; ok {
		return t
	}
	t := &task{ID: id, State: muster.StatePending}
	s.tasks[id] = t
	s.order = append(s.order, id)
	return t
}

// apply folds one event into the state.
func (s *state) apply(e muster.Event) {
	if !e.Time.IsZero() {
		s.last = e.Time
	}
	if line := PlainLine(e); line != "" {
		if !e.Time.IsZero() {
			line = e.Time.UTC().Format(time.TimeOnly) + " " + line
		}
		s.tail = append(s.tail, line)
		if len(s.tail) > maxTail {
			s.tail = append(s.tail[:0:0], s.tail[len(s.tail)-maxTail:]...)
		}
	}
	switch e.Type {
	case muster.EvRunStarted:
		s.Run, s.Plan, s.Branch, s.Started = e.Run, e.Plan, e.Branch, e.Time
		if e.Config != nil {
			if s.Budget == 0 {
				s.Budget = e.Config.Run.BudgetUSDMicros
			}
			for _, x := range e.Config.Executors {
				for c := 1; c <= x.Clones; c++ {
					s.lane(muster.Slot(x.Name, c))
				}
			}
		}
	case muster.EvRunResumed:
		s.RunState, s.Finished = "", time.Time{}
	case muster.EvTasksPlanned:
		for _, pt := range e.Tasks {
			t := s.task(pt.ID)
			t.Title = Sanitize(pt.Title)
			t.After = pt.After
			if pt.Done {
				t.State = muster.StateSucceeded
			}
		}
	case muster.EvExecutorLeased:
		l := s.lane(e.Slot())
		l.Role, l.Task, l.Since, l.Work = e.Role, e.Task, e.Time, muster.Usage{}
	case muster.EvExecutorRelease:
		l := s.lane(e.Slot())
		l.Task, l.Work = "", muster.Usage{}
	case muster.EvTaskStarted:
		t := s.task(e.Task)
		t.State, t.Attempt, t.Phase, t.Round = muster.StateRunning, e.Attempt, "agent", 0
		t.Ended, t.Reason = time.Time{}, ""
		if t.Started.IsZero() || e.Attempt > 1 {
			t.Started = e.Time
		}
		if slot := e.Slot(); slot != "" {
			t.Slot = slot
			l := s.lane(slot)
			if l.Task != e.Task {
				l.Task, l.Since, l.Work = e.Task, e.Time, muster.Usage{}
			}
			if l.Role == "" {
				l.Role = e.Role
			}
		}
	case muster.EvPhase:
		t := s.task(e.Task)
		t.Phase, t.Round = e.Phase, e.Round
	case muster.EvFixRound:
		t := s.task(e.Task)
		t.Round = e.Round
	case muster.EvMessage:
		t := s.task(e.Task)
		t.Msgs = append(t.Msgs, Sanitize(e.Message))
		if len(t.Msgs) > maxMessages {
			t.Msgs = append(t.Msgs[:0:0], t.Msgs[len(t.Msgs)-maxMessages:]...)
		}
	case muster.EvTokensUsed:
		s.Total.Add(e.Usage)
		if e.Task != "" {
			s.task(e.Task).Usage.Add(e.Usage)
		}
		if slot := e.Slot(); slot != "" {
			l := s.lane(slot)
			l.Total.Add(e.Usage)
			if l.Task == e.Task {
				l.Work.Add(e.Usage)
			}
		}
	case muster.EvGateRan:
		t := s.task(e.Task)
		if t.Gates == nil {
			t.Gates = map[string]bool{}
		}
		if _, ok := t.Gates[e.Gate]; !ok {
			t.Gated = append(t.Gated, e.Gate)
		}
		t.Gates[e.Gate] = e.Passed != nil && *e.Passed
	case muster.EvReviewed:
		s.task(e.Task).Finds = len(e.Findings)
	case muster.EvCommitted, muster.EvIntegrated:
		t := s.task(e.Task)
		if e.Commit != "" {
			t.Commit = e.Commit
		}
		if len(e.Paths) > 0 {
			t.Paths = e.Paths
		}
	case muster.EvTaskSucceeded:
		s.end(e, muster.StateSucceeded)
		if e.Commit != "" {
			s.task(e.Task).Commit = e.Commit
		}
	case muster.EvTaskFailed:
		if e.Retry {
			s.end(e, muster.StatePending)
		} else {
			s.end(e, muster.StateFailed)
		}
	case muster.EvTaskSkipped:
		s.end(e, muster.StateSkipped)
	case muster.EvTaskCancelled:
		s.end(e, muster.StateCancelled)
	case muster.EvRunFinished:
		s.RunState, s.Finished = e.State, e.Time
		s.idleAll()
	case muster.EvRunInterrupted:
		s.RunState, s.Finished = muster.RunInterrupted, e.Time
		s.idleAll()
	}
}

// end records a task's end and frees the lanes working on it.
func (s *state) end(e muster.Event, st string) {
	t := s.task(e.Task)
	t.State, t.Ended, t.Reason = st, e.Time, Sanitize(e.Reason)
	t.Phase = ""
	for _, l := range s.lanes {
		if l.Task == e.Task {
			l.Task, l.Work = "", muster.Usage{}
		}
	}
}

func (s *state) idleAll() {
	for _, l := range s.lanes {
		l.Task, l.Work = "", muster.Usage{}
	}
}

// counts returns tasks done (succeeded), running, failed, and the total.
func (s *state) counts() (done, running, failed, total int) {
	for _, id := range s.order {
		switch s.tasks[id].State {
		case muster.StateSucceeded:
			done++
		case muster.StateRunning:
			running++
		case muster.StateFailed:
			failed++
		}
	}
	return done, running, failed, len(s.order)
}

package tui

import (
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/runview"
)

// maxMessages is how many of a task's latest agent messages are kept.
const maxMessages = 50

// maxTail is how many formatted events the scrolling tail keeps.
const maxTail = 200

// state is the fold of a run's events the view draws: the shared fold
// plus what only the live view keeps.
type state struct {
	*runview.Run
	budget int64 // micro-dollars, 0: none; Options.Budget, else the config's

	msgs  map[muster.TaskID][]string // latest agent messages, sanitized, oldest first
	tail  []string                   // the plain printer's lines, tool uses too
	plain plainFold
	last  time.Time // time of the latest event
}

func newState() *state {
	return &state{Run: runview.New(), msgs: map[muster.TaskID][]string{}, plain: newPlainFold()}
}

// apply folds one event into the state.
func (s *state) apply(e muster.Event) {
	if !e.Time.IsZero() {
		s.last = e.Time
	}
	s.plain.apply(&e)
	if line := s.plain.format(&e, false, true); line != "" {
		s.tail = append(s.tail, line)
		if len(s.tail) > maxTail {
			s.tail = append(s.tail[:0:0], s.tail[len(s.tail)-maxTail:]...)
		}
	}
	s.Apply(&e)
	switch e.Type {
	case muster.EvRunStarted:
		if e.Config != nil && s.budget == 0 {
			s.budget = e.Config.Run.BudgetUSDMicros
		}
	case muster.EvMessage:
		s.Task(e.Task)
		m := append(s.msgs[e.Task], textsafe.Sanitize(e.Message))
		if len(m) > maxMessages {
			m = append(m[:0:0], m[len(m)-maxMessages:]...)
		}
		s.msgs[e.Task] = m
	}
}

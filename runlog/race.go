package runlog

import (
	"fmt"
	"strings"

	"github.com/muster-run/muster"
)

// race handles the events of a race for the attempt being told, and
// reports whether e is done with: a race's start is each candidate's
// start (the TaskStarted after it names only one clone, and is skipped),
// a candidate's end and the winner are entries of their attempt.
func (m *merger) race(e *muster.Event, racing *bool) bool {
	switch e.Type {
	case muster.EvRaceStarted:
		*racing = true
		for _, c := range e.Race {
			if c.Attempt != m.attempt {
				continue
			}
			slots := make([]string, len(e.Race))
			for i, r := range e.Race {
				slots[i] = r.Slot()
			}
			m.seq, m.coder = e.Seq, c.Slot()
			m.add(Entry{Time: e.Time, Kind: KindStarted, Slot: c.Slot(), Role: muster.RoleCoder,
				Text: fmt.Sprintf("attempt %d on %s, a candidate of the race on %s", c.Attempt, c.Slot(), strings.Join(slots, ", "))})
		}
		return true
	case muster.EvTaskStarted:
		if *racing {
			*racing = false
			return true
		}
		return false
	case muster.EvCandidateFinished:
		if e.Attempt == m.attempt {
			m.seq = e.Seq
			text := "out of the race: " + e.Reason
			if e.Passed != nil && *e.Passed {
				text = "passed; kept for the race's verdict"
				if e.Stat != nil {
					text = fmt.Sprintf("passed (+%d -%d in %d files); kept for the race's verdict", e.Stat.Added, e.Stat.Deleted, e.Stat.Files)
				}
			}
			m.add(Entry{Time: e.Time, Kind: KindRace, Slot: e.Slot(), Passed: e.Passed, Text: text})
		}
		return true
	case muster.EvRaceWon:
		if e.Attempt == m.attempt {
			m.seq = e.Seq
			how := e.State
			if e.Judge != "" {
				how += ", judge " + e.Judge
			}
			m.add(Entry{Time: e.Time, Kind: KindRace, Slot: e.Slot(), Text: fmt.Sprintf("won the race (%s): %s", how, e.Reason)})
		}
		return true
	}
	return false
}

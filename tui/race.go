package tui

import (
	"fmt"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
)

// raceLine is the line of a race's event: where it raced, each
// candidate's end, who won and why.
func (f *plainFold) raceLine(e *muster.Event, color bool) string {
	c := func(code, s string) string { return f.c(color, code, s) }
	task := textsafe.Sanitize(string(e.Task))
	switch e.Type {
	case muster.EvRaceStarted:
		slots := make([]string, len(e.Race))
		for i, r := range e.Race {
			slots[i] = textsafe.Sanitize(r.Slot())
		}
		line := fmt.Sprintf("%s %s raced on %s", c(bold, "▶"), task, strings.Join(slots, ", "))
		if len(slots) == 0 {
			line = fmt.Sprintf("%s %s race judged on the candidates that finished before the interruption", c(bold, "▶"), task)
		}
		if e.Reason != "" {
			line += " (" + textsafe.Sanitize(e.Reason) + ")"
		}
		return line
	case muster.EvCandidateFinished:
		if e.Passed != nil && *e.Passed {
			size := ""
			if e.Stat != nil {
				size = fmt.Sprintf(" (+%d -%d in %d files)", e.Stat.Added, e.Stat.Deleted, e.Stat.Files)
			}
			return fmt.Sprintf("  %s candidate %s passed%s", task, textsafe.Sanitize(e.Slot()), size)
		}
		return fmt.Sprintf("%s %s candidate %s out: %s", c(yellow, "!"), task, textsafe.Sanitize(e.Slot()), textsafe.Sanitize(e.Reason))
	case muster.EvRaceWon:
		how := e.State
		if e.Judge != "" && e.State == muster.RaceJudge {
			how = "judge " + e.Judge
		}
		return fmt.Sprintf("%s %s won by %s (%s): %s", c(green, "★"), task, textsafe.Sanitize(e.Slot()), textsafe.Sanitize(how), textsafe.Sanitize(e.Reason))
	}
	return ""
}

package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
)

// Race is one race of a task (Race: N | first): each candidate and the
// winner, folded from RaceStarted, GateRan, TokensUsed, CandidateFinished
// and RaceWon.
type Race struct {
	Run  string        `json:"run"`
	Task muster.TaskID `json:"task"`
	// Winner is the winning candidate's slot ("" when none passed), How
	// how it was chosen (judge, smallest, first, only), Judge the judge's
	// slot, Reason why (untrusted).
	Winner     string          `json:"winner"`
	How        string          `json:"how,omitempty"`
	Judge      string          `json:"judge,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Candidates []RaceCandidate `json:"candidates"`
	// CostMicros is the race's total: every candidate's and the judge's.
	CostMicros int64   `json:"cost_micros"`
	CostUSD    float64 `json:"cost_usd"`
}

// RaceCandidate is one candidate of a race.
type RaceCandidate struct {
	Slot     string `json:"slot"`
	Executor string `json:"executor"`
	Attempt  int    `json:"attempt"`
	// Verdict is "won", "lost" (passed, another won), "out" (failed or
	// cancelled) or "running".
	Verdict     string  `json:"verdict"`
	Reason      string  `json:"reason,omitempty"` // why it is out (untrusted)
	GatesPassed int     `json:"gates_passed"`
	GatesFailed int     `json:"gates_failed"`
	Added       int     `json:"added"`
	Deleted     int     `json:"deleted"`
	Files       int     `json:"files"`
	CostMicros  int64   `json:"cost_micros"`
	CostUSD     float64 `json:"cost_usd"`
}

// WinRate is how often an executor's candidates won the races they ran in.
type WinRate struct {
	Executor string  `json:"executor"`
	Races    int     `json:"races"`
	Wins     int     `json:"wins"`
	Rate     float64 `json:"win_rate"`
}

// raceFold is the races of one run under way.
type raceFold struct {
	run     string
	current map[muster.TaskID]*Race
	done    []*Race
}

func (f *raceFold) candidate(task muster.TaskID, attempt int) *RaceCandidate {
	r := f.current[task]
	if r == nil {
		return nil
	}
	for i := range r.Candidates {
		if r.Candidates[i].Attempt == attempt {
			return &r.Candidates[i]
		}
	}
	return nil
}

func (f *raceFold) apply(e *muster.Event) {
	switch e.Type {
	case muster.EvRunStarted:
		f.run = e.Run
	case muster.EvRaceStarted:
		r := f.current[e.Task]
		if r == nil {
			r = &Race{Run: f.run, Task: e.Task}
			f.current[e.Task] = r
			f.done = append(f.done, r)
		}
		for _, c := range e.Race {
			r.Candidates = append(r.Candidates, RaceCandidate{Slot: c.Slot(), Executor: c.Executor, Attempt: c.Attempt, Verdict: "running"})
		}
	case muster.EvGateRan:
		if c := f.candidate(e.Task, e.Attempt); c != nil && e.Passed != nil && e.Phase != "integration" {
			if *e.Passed {
				c.GatesPassed++
			} else if !e.Uncharged() {
				c.GatesFailed++
			}
		}
	case muster.EvTokensUsed:
		if r := f.current[e.Task]; r != nil && e.Counted() {
			r.CostMicros += e.Credited().CostMicros
			if c := f.candidate(e.Task, e.Attempt); c != nil {
				c.CostMicros += e.Credited().CostMicros
			}
		}
	case muster.EvCandidateFinished:
		if c := f.candidate(e.Task, e.Attempt); c != nil {
			c.Verdict, c.Reason = "out", e.Reason
			if e.Passed != nil && *e.Passed {
				c.Verdict, c.Reason = "lost", ""
			}
			if e.Stat != nil {
				c.Added, c.Deleted, c.Files = e.Stat.Added, e.Stat.Deleted, e.Stat.Files
			}
		}
	case muster.EvRaceWon:
		if r := f.current[e.Task]; r != nil {
			r.Winner, r.How, r.Judge, r.Reason = e.Slot(), e.State, e.Judge, e.Reason
			if c := f.candidate(e.Task, e.Attempt); c != nil {
				c.Verdict = "won"
			}
		}
	case muster.EvTaskCancelled:
		// Interrupted: what ran starts again under a new attempt.
		if r := f.current[e.Task]; r != nil {
			for i := range r.Candidates {
				if c := &r.Candidates[i]; c.Verdict == "running" {
					c.Verdict, c.Reason = "out", e.Reason
				}
			}
		}
	case muster.EvTaskSucceeded, muster.EvTaskFailed:
		delete(f.current, e.Task) // the race is over; the next is a new one
	}
}

// addRaces folds every run's races, and each executor's win rate across
// them, into r.
func (r *Report) addRaces(runs [][]muster.Event) {
	for _, events := range runs {
		f := &raceFold{current: map[muster.TaskID]*Race{}}
		for i := range events {
			f.apply(&events[i])
		}
		for _, race := range f.done {
			race.CostUSD = float64(race.CostMicros) / 1e6
			for i := range race.Candidates {
				c := &race.Candidates[i]
				c.CostUSD = float64(c.CostMicros) / 1e6
			}
			r.Races = append(r.Races, *race)
		}
	}
	rates := map[string]*WinRate{}
	for _, race := range r.Races {
		if race.Winner == "" {
			continue // an unfinished race, or none passed: no verdict on anyone
		}
		for _, c := range race.Candidates {
			w := rates[c.Executor]
			if w == nil {
				w = &WinRate{Executor: c.Executor}
				rates[c.Executor] = w
			}
			w.Races++
			if c.Verdict == "won" {
				w.Wins++
			}
		}
	}
	for _, w := range rates {
		w.Rate = float64(w.Wins) / float64(w.Races)
		r.WinRates = append(r.WinRates, *w)
	}
	sort.Slice(r.WinRates, func(i, j int) bool { return r.WinRates[i].Executor < r.WinRates[j].Executor })
}

// writeRaces writes each race (its candidates' executor, cost, gates and
// verdict, and its total) and the executors' win rates.
func writeRaces(w io.Writer, r *Report) error {
	for _, race := range r.Races {
		winner := "no winner"
		if race.Winner != "" {
			winner = "won by " + textsafe.Sanitize(race.Winner) + " (" + textsafe.Sanitize(race.How)
			if race.Judge != "" {
				winner += ", judge " + textsafe.Sanitize(race.Judge)
			}
			winner += "): " + textsafe.Sanitize(race.Reason)
		}
		fmt.Fprintf(w, "\nRace of %s in run %s, %s; total %s\n", textsafe.Sanitize(string(race.Task)), textsafe.Sanitize(race.Run), winner, usd(race.CostMicros))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  Candidate\tAttempt\tGates ok\tGates failed\tChange\tCost\tVerdict\t\n")
		for _, c := range race.Candidates {
			verdict := c.Verdict
			if c.Reason != "" {
				verdict += ": " + textsafe.Sanitize(firstLine(c.Reason))
			}
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t+%d -%d in %d\t%s\t%s\t\n", textsafe.Sanitize(c.Slot), c.Attempt, c.GatesPassed, c.GatesFailed,
				c.Added, c.Deleted, c.Files, usd(c.CostMicros), verdict)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.WinRates) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nRace win rate by executor\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, wr := range r.WinRates {
		fmt.Fprintf(tw, "  %s\t%d of %d\t%.0f%%\t\n", textsafe.Sanitize(wr.Executor), wr.Wins, wr.Races, wr.Rate*100)
	}
	return tw.Flush()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

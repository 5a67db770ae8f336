package runview

import "github.com/muster-run/muster"

// Race is one race of a task (Race:), as the views show it.
type Race struct {
	Task muster.TaskID
	// Winner is the winning candidate's slot ("" until one won), How how
	// (judge, smallest, first, only), Judge the judge's slot, Reason why
	// (untrusted).
	Winner, How, Judge, Reason string
	Candidates                 []Candidate
	Usage                      muster.Usage // every candidate's and the judge's
}

// Candidate is one attempt of a race.
type Candidate struct {
	Slot    string
	Attempt int
	// Verdict is running, won, lost (passed, another won) or out (failed
	// or cancelled: Reason says why, untrusted).
	Verdict, Reason      string
	GatesOK, GatesFailed int
	Stat                 muster.DiffStat
	Usage                muster.Usage
}

// Candidate verdicts.
const (
	VerdictRunning = "running"
	VerdictWon     = "won"
	VerdictLost    = "lost"
	VerdictOut     = "out"
)

// RaceUnderWay is the race of task under way, nil when none is.
func (r *Run) RaceUnderWay(task muster.TaskID) *Race { return r.raceOf(task) }

// Place is which of the race's candidates runs on slot ("executor#clone"),
// 1-based, and how many there are; 0 when none does.
func (rc *Race) Place(slot string) (i, n int) {
	for k, c := range rc.Candidates {
		if c.Slot == slot {
			return k + 1, len(rc.Candidates)
		}
	}
	return 0, len(rc.Candidates)
}

func (r *Run) raceOf(task muster.TaskID) *Race {
	if r.racing == nil {
		return nil
	}
	return r.racing[task]
}

func (rc *Race) candidate(attempt int) *Candidate {
	for i := range rc.Candidates {
		if rc.Candidates[i].Attempt == attempt {
			return &rc.Candidates[i]
		}
	}
	return nil
}

// foldRace folds what a race's events say of it; the events shared with
// the tasks' fold (usage, gates, a task's end) are folded there too.
func (r *Run) foldRace(e *muster.Event) {
	switch e.Type {
	case muster.EvRaceStarted:
		rc := r.raceOf(e.Task)
		if rc == nil {
			if r.racing == nil {
				r.racing = map[muster.TaskID]*Race{}
			}
			rc = &Race{Task: e.Task}
			r.racing[e.Task] = rc
			r.Races = append(r.Races, rc)
		}
		for _, c := range e.Race {
			rc.Candidates = append(rc.Candidates, Candidate{Slot: c.Slot(), Attempt: c.Attempt, Verdict: VerdictRunning})
		}
		return
	}
	rc := r.raceOf(e.Task)
	if rc == nil {
		return
	}
	c := rc.candidate(e.Attempt)
	switch e.Type {
	case muster.EvTokensUsed:
		if e.Counted() {
			rc.Usage.Add(e.Credited())
			if c != nil {
				c.Usage.Add(e.Credited())
			}
		}
	case muster.EvGateRan:
		if c != nil && e.Passed != nil && e.Phase != "integration" {
			if *e.Passed {
				c.GatesOK++
			} else if !e.Uncharged() {
				c.GatesFailed++
			}
		}
	case muster.EvCandidateFinished:
		if c != nil {
			c.Verdict, c.Reason = VerdictOut, e.Reason
			if e.Passed != nil && *e.Passed {
				c.Verdict, c.Reason = VerdictLost, ""
			}
			if e.Stat != nil {
				c.Stat = *e.Stat
			}
		}
	case muster.EvRaceWon:
		rc.Winner, rc.How, rc.Judge, rc.Reason = e.Slot(), e.State, e.Judge, e.Reason
		if c != nil {
			c.Verdict = VerdictWon
		}
	case muster.EvTaskCancelled:
		for i := range rc.Candidates {
			if rc.Candidates[i].Verdict == VerdictRunning {
				rc.Candidates[i].Verdict, rc.Candidates[i].Reason = VerdictOut, e.Reason
			}
		}
	case muster.EvTaskSucceeded, muster.EvTaskFailed:
		delete(r.racing, e.Task) // the next race of the task is a new one
	}
}

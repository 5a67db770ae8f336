package engine

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/muster-run/muster"
)

// Candidate states.
const (
	CandRunning   = "running"
	CandPassed    = "passed"
	CandFailed    = "failed"
	CandCancelled = "cancelled"
)

// Candidate is one attempt of a race.
type Candidate struct {
	muster.RaceCandidate
	State  string
	Commit string // the passing change's commit ("" for an empty change)
	Base   string
	Stat   muster.DiffStat
	Reason string
	Usage  muster.Usage
	Order  int // start order within the race
}

// Race is a raced task's current race, folded from RaceStarted,
// CandidateFinished and RaceWon.
type Race struct {
	// Round counts the task's races (Retries apply to races).
	Round      int
	Candidates []*Candidate
	// Winner is the index of the winner in Candidates (-1: none yet),
	// How and Why how and why it won, Judge the judge's slot.
	Winner   int
	How, Why string
	Judge    string
	// Done is set when the task ended after the race (succeeded or
	// failed): the next start is a new race. A race cancelled by an
	// interruption is not done: a resume keeps its finished candidates.
	Done bool
}

// Candidate returns the candidate of an attempt, or nil.
func (r *Race) Candidate(attempt int) *Candidate {
	for _, c := range r.Candidates {
		if c.Attempt == attempt {
			return c
		}
	}
	return nil
}

// Finished returns the candidates that ended passed or failed.
func (r *Race) Finished() []*Candidate {
	var out []*Candidate
	for _, c := range r.Candidates {
		if c.State == CandPassed || c.State == CandFailed {
			out = append(out, c)
		}
	}
	return out
}

// Running counts the candidates still running.
func (r *Race) Running() int {
	n := 0
	for _, c := range r.Candidates {
		if c.State == CandRunning {
			n++
		}
	}
	return n
}

// RaceOf returns how many candidates a task races (0: it does not) and
// whether the first to pass wins (Race: first): the task's Race:, else
// [run] race for an agent task that does not delegate. Race: first runs
// as many candidates as Executor: names, else [run] race's number, else 2.
func RaceOf(t *muster.Task, cfg *muster.Config) (n int, first bool) {
	if t.EffectiveKind() == muster.KindCode || t.Delegates {
		return 0, false
	}
	n, first = t.Race, t.RaceFirst
	if !t.Racing() && cfg != nil {
		n, first = cfg.Run.Race, cfg.Run.RaceFirst
	}
	if first && n == 0 {
		switch {
		case len(t.Candidates) >= 2:
			n = len(t.Candidates)
		case cfg != nil && cfg.Run.Race >= 2:
			n = cfg.Run.Race
		default:
			n = 2
		}
	}
	return n, first
}

// applyRace folds a race's events.
func (s *State) applyRace(e *muster.Event) error {
	t, err := s.task(e)
	if err != nil {
		return err
	}
	switch e.Type {
	case muster.EvRaceStarted:
		r := t.Race
		if r == nil || r.Done {
			round := 1
			if r != nil {
				round = r.Round + 1
			}
			r = &Race{Round: round, Winner: -1}
			t.Race = r
		} else {
			// A resumed race keeps what finished.
			r.Candidates = r.Finished()
			r.Winner, r.How, r.Why, r.Judge = -1, "", "", ""
		}
		for _, c := range e.Race {
			r.Candidates = append(r.Candidates, &Candidate{RaceCandidate: c, State: CandRunning, Order: len(r.Candidates)})
		}
	case muster.EvCandidateFinished:
		c := t.raceCandidate(e.Attempt)
		if c == nil {
			return fmt.Errorf("event %d: task %s: no race candidate of attempt %d", e.Seq, t.Task.ID, e.Attempt)
		}
		c.State, c.Commit, c.Base, c.Reason = CandFailed, e.Commit, e.Base, e.Reason
		if e.Passed != nil && *e.Passed {
			c.State = CandPassed
		}
		if e.Stat != nil {
			c.Stat = *e.Stat
		}
	case muster.EvRaceWon:
		r := t.Race
		if r == nil {
			return fmt.Errorf("event %d: task %s: a winner without a race", e.Seq, t.Task.ID)
		}
		for i, c := range r.Candidates {
			if c.Attempt == e.Attempt {
				r.Winner, r.How, r.Why, r.Judge = i, e.State, e.Reason, e.Judge
				return nil
			}
		}
		return fmt.Errorf("event %d: task %s: winner attempt %d is no candidate", e.Seq, t.Task.ID, e.Attempt)
	}
	return nil
}

func (t *TaskState) raceCandidate(attempt int) *Candidate {
	if t.Race == nil {
		return nil
	}
	return t.Race.Candidate(attempt)
}

// endRace folds a raced task's end: a success or a failure closes its
// race; a cancellation leaves the finished candidates for a resume, the
// others cancelled.
func (t *TaskState) endRace(e *muster.Event) {
	r := t.Race
	if r == nil || r.Done {
		return
	}
	switch e.Type {
	case muster.EvTaskSucceeded, muster.EvTaskFailed:
		r.Done = true
	case muster.EvTaskCancelled:
		for _, c := range r.Candidates {
			if c.State == CandRunning {
				c.State = CandCancelled
			}
		}
	}
}

// Smallest returns the passing candidate with the smallest change:
// fewest added plus deleted lines, then fewest files, then start order;
// nil when none passed.
func Smallest(cands []*Candidate) *Candidate {
	var pass []*Candidate
	for _, c := range cands {
		if c.State == CandPassed {
			pass = append(pass, c)
		}
	}
	if len(pass) == 0 {
		return nil
	}
	sort.SliceStable(pass, func(i, j int) bool {
		return muster.SmallerChange(pass[i].Stat, pass[i].Order, pass[j].Stat, pass[j].Order)
	})
	return pass[0]
}

// raceSlots picks up to want free clones for a race's candidates: from
// the executors that may run it (its candidates, its Executor, or the
// crew's executors of its role and model), distinct kinds first, then
// distinct executors, then more clones of the same, in crew order.
func (s *State) raceSlots(t *TaskState, want int, free func(exec string) []int) []muster.RaceCandidate {
	cfg := s.Config
	var execs []*muster.ExecutorSpec
	switch {
	case len(t.Task.Candidates) > 0:
		for _, name := range t.Task.Candidates {
			if e := cfg.Executor(name); e != nil && e.OffersModel(t.Task.Model) {
				execs = append(execs, e)
			}
		}
	default:
		for _, e := range cfg.Executors {
			if t.Task.Executor != "" && e.Name != t.Task.Executor || t.Task.Executor == "" && !e.HasRole(t.Task.EffectiveRole()) {
				continue
			}
			if e.OffersModel(t.Task.Model) {
				execs = append(execs, e)
			}
		}
	}
	clones := map[string][]int{}
	for _, e := range execs {
		clones[e.Name] = free(e.Name)
	}
	var out []muster.RaceCandidate
	kinds, used := map[muster.ExecKind]bool{}, map[string]bool{}
	take := func(e *muster.ExecutorSpec) {
		out = append(out, muster.RaceCandidate{Executor: e.Name, Clone: clones[e.Name][0]})
		clones[e.Name] = clones[e.Name][1:]
		kinds[e.Kind], used[e.Name] = true, true
	}
	for pass := 0; pass < 3 && len(out) < want; pass++ {
		for more := true; more && len(out) < want; {
			more = false
			for _, e := range execs {
				if len(out) >= want || len(clones[e.Name]) == 0 {
					continue
				}
				if pass == 0 && kinds[e.Kind] || pass == 1 && used[e.Name] {
					continue
				}
				take(e)
				more = pass == 2
			}
		}
	}
	return out
}

// eligibleCapacity is how many clones of the executors that may run a
// raced task exist at all (busy or not), to bound what it waits for.
func (s *State) eligibleCapacity(t *muster.Task) int {
	n := 0
	for _, e := range s.Config.Executors {
		ok := e.HasRole(t.EffectiveRole()) && t.Executor == ""
		if len(t.Candidates) > 0 {
			ok = false
			for _, c := range t.Candidates {
				ok = ok || c == e.Name
			}
		} else if t.Executor != "" {
			ok = e.Name == t.Executor
		}
		if ok && e.OffersModel(t.Model) {
			n += capacity(e)
		}
	}
	return n
}

// race starts a raced task's candidates (ActStart with Race) when the
// crew has the clones free. It reports false when the race waits for
// clones: nothing after it in the ready list starts then, so that the
// race is not starved by smaller work. The budget's reservation covers
// every candidate before any starts; a race the budget cannot cover runs
// fewer candidates and says so (Action.Short).
func (d *decision) race(t *TaskState, n int, first bool) bool {
	s, cfg := d.s, d.s.Config
	kept, round := 0, 1
	if r := t.Race; r != nil && !r.Done {
		kept, round = len(r.Finished()), r.Round
	} else if r != nil {
		round = r.Round + 1
	}
	want := min(max(n-kept, 0), s.eligibleCapacity(t.Task))
	if mp := cfg.Run.MaxParallel; mp > 0 {
		want = min(want, mp)
	}
	m, k := s.Expected(t.Task)
	afford := want
	for afford > 0 && s.budgetRefusal(t.Task, d.resM+int64(afford-1)*m, d.resK+int64(afford-1)*k) != "" {
		afford--
	}
	short := ""
	switch {
	case afford == 0 && want > 0 && kept == 0:
		if d.broke == "" {
			d.broke = s.budgetRefusal(t.Task, d.resM, d.resK)
		}
		return true
	case afford < want:
		short = fmt.Sprintf("budget: race of %s runs %d of %d candidates: %s", t.Task.ID, afford+kept, n,
			s.budgetRefusal(t.Task, d.resM+int64(afford)*m, d.resK+int64(afford)*k))
	}
	if mp := cfg.Run.MaxParallel; mp > 0 && afford > 0 && d.coders+afford > mp {
		return false
	}
	slots := s.raceSlots(t, afford, func(exec string) []int {
		e := cfg.Executor(exec)
		if e == nil || !d.usable(e) {
			return nil
		}
		var out []int
		nfree, _ := d.free(exec, capacity(e))
		for c := 1; c <= capacity(e) && len(out) < nfree; c++ {
			if !d.busy(exec, c) {
				out = append(out, c)
			}
		}
		return out
	})
	if len(slots) < afford {
		return false
	}
	for i := range slots {
		slots[i].Attempt = t.Attempts + 1 + i
		d.take(t, slots[i].Executor, slots[i].Clone)
	}
	a := Action{Kind: ActStart, Task: t.Task.ID, Role: t.Task.EffectiveRole(), Attempt: t.Attempts + len(slots),
		Race: slots, RaceSize: n, RaceFirst: first, RaceRound: round, Short: short}
	switch {
	case len(slots) > 0:
		a.Executor, a.Clone = slots[0].Executor, slots[0].Clone
	default:
		// Every candidate finished before an interruption: the race is
		// judged (and its winner integrated) with no new attempt.
		c := t.Race.Finished()[0]
		a.Executor, a.Clone, a.Attempt = c.Executor, c.Clone, max(t.Attempts, 1)
	}
	d.acts = append(d.acts, a)
	return true
}

// racing is how many candidates of the task's race run now (0: it is not
// racing).
func (t *TaskState) racing() int {
	if t.Race == nil || t.Race.Done || t.State != muster.StateRunning {
		return 0
	}
	return t.Race.Running()
}

// FreeSlotAvoiding is FreeSlot preferring executors none of avoid names
// (a race's judge: none of the candidates'); ok is false when no clone of
// the role is free.
func FreeSlotAvoiding(s *State, role muster.Role, avoid []string, now time.Time) (exec string, clone int, ok bool) {
	return freeSlot(s, role, func(name string) bool { return slices.Contains(avoid, name) }, now)
}

// raceUnderWay reports whether a raced task is running: its race decides
// its end even when no clone is leased for it.
func (s *State) raceUnderWay() bool {
	for _, t := range s.Tasks {
		if t.State == muster.StateRunning && t.Race != nil && !t.Race.Done {
			return true
		}
	}
	return false
}

// raceSize is how many candidates the task's race under way has had
// (finished or not; 0: it is not racing): what its Budget: covers.
func (t *TaskState) raceSize() int {
	if t.Race == nil || t.Race.Done || t.State != muster.StateRunning {
		return 0
	}
	return len(t.Race.Candidates)
}

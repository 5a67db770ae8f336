package driver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// Races (Race: N | first; issue 27).
//
// A raced task's start (engine.Action with Race) leases one clone per
// candidate and starts one worker per candidate, each an ordinary attempt
// (its own clone, fix rounds up to max_rounds, gates and review), and a
// racer goroutine that decides the race. A candidate whose change passes
// hands its commit to the racer (submit) and waits: the racer keeps it
// as refs/muster/<run>/race/<task>/<attempt> (muster.RaceKeeper) and
// journals CandidateFinished, synced, before any comparison, so that a
// crash keeps it. When every candidate has finished, the racer picks the
// winner (a judge, else the smallest change; Race: first: the first to
// pass, the others cancelled), journals RaceWon, and the winner's worker
// goes on through the integration queue as any task's; the others end
// with nothing of the task's. A winner that finished before a crash has
// no worker: the racer integrates its commit itself.

// errRaceLost is the cause of a candidate cancelled because another won.
var errRaceLost = errors.New("the race was won by another candidate")

// raceSub is a passing candidate waiting for the race's verdict.
type raceSub struct {
	cand         muster.RaceCandidate
	commit, base string
	decide       chan bool // true: won, go on integrating
}

// raceEnd is a candidate's worker ending.
type raceEnd struct {
	cand      muster.RaceCandidate
	final     []muster.Event
	submitted bool
}

// entry is a passing candidate as the racer compares it.
type entry struct {
	cand         muster.RaceCandidate
	commit, base string
	stat         muster.DiffStat
	order        int
	sub          *raceSub // nil: no worker waits (kept, or an empty change)
}

// racer decides one race.
type racer struct {
	d       *Driver
	a       engine.Action
	ts      *engine.TaskState // read on the loop goroutine only (startRace)
	task    *muster.Task
	cfg     *muster.Config
	runID   string
	kept    []engine.Candidate
	subs    chan raceSub
	ends    chan raceEnd
	cancels map[int]context.CancelCauseFunc // by attempt
	order   int
	tally   []string // why each candidate is out
}

// startRace starts a race's candidates and its racer (on the loop
// goroutine, after their start is durable).
func (d *Driver) startRace(ctx context.Context, a engine.Action) {
	actx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	d.cancels[a.Task] = cancel
	ts := d.state.Tasks[a.Task]
	rc := &racer{d: d, a: a, ts: ts, task: ts.Task, cfg: d.state.Config, runID: d.state.Run,
		subs: make(chan raceSub, len(a.Race)), ends: make(chan raceEnd, len(a.Race)), cancels: map[int]context.CancelCauseFunc{}}
	if ts.Race != nil {
		for _, c := range ts.Race.Finished() {
			rc.kept = append(rc.kept, *c)
		}
	}
	for _, c := range a.Race {
		rc.startCandidate(actx, c)
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel(nil)
		d.msgs <- message{events: rc.runRecovered(actx), done: true}
	}()
}

// worker returns a worker for one candidate's attempt.
func (rc *racer) worker(c muster.RaceCandidate) *worker {
	a := engine.Action{Kind: engine.ActStart, Task: rc.a.Task, Executor: c.Executor, Clone: c.Clone, Role: rc.a.Role, Attempt: c.Attempt}
	w := &worker{d: rc.d, a: a, task: rc.task, cfg: rc.cfg, runID: rc.runID, race: rc}
	w.scratch = filepath.Join(rc.d.opts.ScratchDir, fmt.Sprintf("%s-%d", rc.a.Task, c.Attempt))
	return w
}

func (rc *racer) startCandidate(ctx context.Context, c muster.RaceCandidate) {
	cctx, cancel := context.WithCancelCause(ctx)
	rc.cancels[c.Attempt] = cancel
	w := rc.worker(c)
	w.followup, w.prFeedback = rc.ts.Followup, rc.ts.Feedback
	w.deps = rc.d.depOutputs(w.task)
	rc.d.wg.Add(1)
	go func() {
		defer rc.d.wg.Done()
		defer cancel(nil)
		final := w.runRecovered(cctx)
		if !w.released { // the winner's went back while its commit waited (clonelease.go)
			w.send(muster.Event{Type: muster.EvExecutorRelease, Executor: w.a.Executor, Clone: w.a.Clone, Role: rc.a.Role})
		}
		rc.ends <- raceEnd{cand: c, final: final, submitted: w.raceSubmitted}
	}()
}

// submit hands a passing candidate's commit to the racer and waits for
// the verdict: nil when it won (the worker goes on to integrate), else
// the attempt's end (nothing of the task's).
func (rc *racer) submit(ctx context.Context, w *worker, commit string) []muster.Event {
	s := raceSub{cand: muster.RaceCandidate{Executor: w.a.Executor, Clone: w.a.Clone, Attempt: w.a.Attempt},
		commit: commit, base: w.base, decide: make(chan bool, 1)}
	rc.subs <- s
	select {
	case won := <-s.decide:
		if won {
			return nil
		}
		return []muster.Event{}
	case <-ctx.Done():
		return w.cancelled(ctx)
	}
}

// runRecovered decides the race; a panic stops the run cleanly.
func (rc *racer) runRecovered(ctx context.Context) (final []muster.Event) {
	defer func() {
		if r := recover(); r != nil {
			pe := &muster.PanicError{Where: fmt.Sprintf("the race of task %s", rc.a.Task), Value: r, Stack: string(debug.Stack())}
			rc.d.msgs <- message{fatal: pe}
			final = []muster.Event{{Type: muster.EvTaskCancelled, Task: rc.a.Task, Attempt: rc.a.Attempt, Reason: bound("the run stopped: "+pe.Error(), 600), Cause: muster.CauseStopped}}
		}
	}()
	return stopped(ctx, rc.run(ctx))
}

// send hands events of the race to the loop.
func (rc *racer) send(evs ...muster.Event) {
	for i := range evs {
		evs[i].Task = rc.a.Task
	}
	rc.d.msgs <- message{events: evs}
}

// durable hands events to the loop and waits until they are synced.
func (rc *racer) durable(evs ...muster.Event) error {
	for i := range evs {
		evs[i].Task = rc.a.Task
	}
	reply := make(chan error, 1)
	rc.d.msgs <- message{events: evs, durable: reply}
	return <-reply
}

// raceState is what the racer's loop has seen.
type raceState struct {
	live, running int
	passed        []*entry
	held          []*entry
	winner        *entry
	winnerFinal   []muster.Event
	winnerEnded   bool
	cancelled     *muster.Event // the race was cancelled (an interruption, the budget, a stop)
	decided       bool
}

func (rc *racer) run(ctx context.Context) []muster.Event {
	st := &raceState{live: len(rc.a.Race), running: len(rc.a.Race)}
	for _, c := range rc.kept {
		rc.order++
		if c.State == engine.CandPassed {
			st.passed = append(st.passed, &entry{cand: c.RaceCandidate, commit: c.Commit, base: c.Base, stat: c.Stat, order: c.Order})
		} else {
			rc.tally = append(rc.tally, c.Slot()+": "+c.Reason)
		}
	}
	if rc.a.RaceFirst && len(st.passed) > 0 {
		rc.win(ctx, st, st.passed[0], muster.RaceFirst, "the first candidate to pass its gates and review (before the interruption)", "")
	}
	for st.live > 0 || !st.decided {
		if st.running == 0 && !st.decided {
			rc.decide(ctx, st)
			continue
		}
		select {
		case s := <-rc.subs:
			rc.passed(ctx, st, s)
		case e := <-rc.ends:
			rc.ended(ctx, st, e)
		}
	}
	return rc.outcome(ctx, st)
}

// passed records a passing candidate: its ref, then CandidateFinished,
// synced, before it is compared.
func (rc *racer) passed(ctx context.Context, st *raceState, s raceSub) {
	st.running--
	e := &entry{cand: s.cand, commit: s.commit, base: s.base, order: rc.order, sub: &s}
	rc.order++
	diff, err := rc.diff(ctx, e)
	if err == nil {
		e.stat = diffStatOf(diff)
		if k, ok := rc.d.opts.Workspace.(muster.RaceKeeper); ok {
			err = k.KeepRace(context.WithoutCancel(ctx), rc.a.Task, s.cand.Attempt, s.commit)
		}
	}
	if err != nil {
		rc.out(st, s.cand, "muster could not keep its change: "+err.Error())
		s.decide <- false
		return
	}
	yes := true
	stat := e.stat
	if err := rc.durable(muster.Event{Type: muster.EvCandidateFinished, Attempt: s.cand.Attempt, Executor: s.cand.Executor, Clone: s.cand.Clone,
		Passed: &yes, Commit: s.commit, Base: s.base, Stat: &stat}); err != nil {
		s.decide <- false
		return
	}
	st.passed = append(st.passed, e)
	if st.decided {
		s.decide <- false // Race: first, and another won already
		return
	}
	st.held = append(st.held, e)
	if rc.a.RaceFirst && st.winner == nil {
		rc.win(ctx, st, e, muster.RaceFirst, "the first candidate to pass its gates and review", "")
	}
}

// ended takes a candidate's worker's end.
func (rc *racer) ended(ctx context.Context, st *raceState, e raceEnd) {
	st.live--
	if st.winner != nil && st.winner.cand == e.cand {
		st.winnerFinal, st.winnerEnded = e.final, true
		return
	}
	if e.submitted {
		return // a loser that passed: recorded when it passed
	}
	st.running--
	var pass []muster.Event
	var end *muster.Event
	for i := range e.final {
		switch e.final[i].Type {
		case muster.EvTaskSucceeded, muster.EvTaskFailed, muster.EvTaskCancelled:
			end = &e.final[i]
		default:
			pass = append(pass, e.final[i])
		}
	}
	if len(pass) > 0 {
		rc.send(pass...)
	}
	switch {
	case end == nil:
		rc.out(st, e.cand, "the attempt ended without an outcome")
	case end.Type == muster.EvTaskSucceeded:
		// Passed with no change to commit (it holds as it is).
		yes := true
		en := &entry{cand: e.cand, order: rc.order}
		rc.order++
		if rc.durable(muster.Event{Type: muster.EvCandidateFinished, Attempt: e.cand.Attempt, Executor: e.cand.Executor, Clone: e.cand.Clone,
			Passed: &yes, Stat: &muster.DiffStat{}, Reason: end.Reason}) != nil {
			return
		}
		st.passed = append(st.passed, en)
		if rc.a.RaceFirst && st.winner == nil {
			rc.win(ctx, st, en, muster.RaceFirst, "the first candidate to pass (with no change needed)", "")
		}
	case end.Type == muster.EvTaskCancelled && ctx.Err() == nil && strings.Contains(end.Reason, errRaceLost.Error()):
		rc.out(st, e.cand, "cancelled: "+errRaceLost.Error())
	case end.Type == muster.EvTaskCancelled:
		if st.cancelled == nil {
			c := *end
			st.cancelled = &c
		}
	default:
		rc.out(st, e.cand, end.Reason)
	}
}

// out records a candidate that is out of the race.
func (rc *racer) out(st *raceState, c muster.RaceCandidate, why string) {
	no := false
	rc.tally = append(rc.tally, c.Slot()+": "+why)
	_ = rc.durable(muster.Event{Type: muster.EvCandidateFinished, Attempt: c.Attempt, Executor: c.Executor, Clone: c.Clone,
		Passed: &no, Reason: bound(why, 600)})
}

// decide picks the winner once every candidate has finished.
func (rc *racer) decide(ctx context.Context, st *raceState) {
	st.decided = true
	if st.winner == nil && ctx.Err() == nil && st.cancelled == nil {
		switch len(st.passed) {
		case 0:
		case 1:
			rc.win(ctx, st, st.passed[0], muster.RaceOnly, "the only candidate that passed", "")
		default:
			how, why, judge, e := rc.judged(ctx, st)
			rc.win(ctx, st, e, how, why, judge)
		}
	}
	for _, h := range st.held {
		if h != st.winner {
			h.sub.decide <- false
		}
	}
}

// win journals the winner (synced) and lets its worker go on; under
// Race: first the candidates still running are cancelled.
func (rc *racer) win(ctx context.Context, st *raceState, e *entry, how, why, judge string) {
	if err := rc.durable(muster.Event{Type: muster.EvRaceWon, Attempt: e.cand.Attempt, Executor: e.cand.Executor, Clone: e.cand.Clone,
		Commit: e.commit, State: how, Reason: bound(why, 600), Judge: judge}); err != nil {
		return
	}
	st.winner = e
	if e.sub != nil {
		e.sub.decide <- true
	} else {
		st.winnerEnded = true
	}
	if how == muster.RaceFirst {
		st.decided = true
		for attempt, cancel := range rc.cancels {
			if attempt != e.cand.Attempt {
				cancel(errRaceLost)
			}
		}
		for _, h := range st.held {
			if h != e {
				h.sub.decide <- false
			}
		}
		st.held = nil
	}
}

// outcome is the task's end after the race.
func (rc *racer) outcome(ctx context.Context, st *raceState) []muster.Event {
	retry := rc.a.RaceRound <= rc.task.Retries
	switch {
	case st.cancelled != nil && (st.winner == nil || !st.winnerEnded):
		return []muster.Event{*st.cancelled}
	case ctx.Err() != nil && (st.winner == nil || st.winner.sub == nil):
		reason, why := cancelOf(context.Cause(ctx))
		return []muster.Event{{Type: muster.EvTaskCancelled, Task: rc.a.Task, Attempt: rc.a.Attempt, Reason: reason, Cause: why}}
	case st.winner == nil:
		return []muster.Event{{Type: muster.EvTaskFailed, Task: rc.a.Task, Attempt: rc.a.Attempt, Retry: retry,
			Reason: bound("race: no candidate passed: "+strings.Join(rc.tally, "; "), 1000)}}
	case st.winner.sub != nil:
		final := st.winnerFinal
		for i := range final {
			if final[i].Type == muster.EvTaskFailed && final[i].Retry {
				final[i].Retry = retry
			}
		}
		return final
	case st.winner.commit == "":
		return []muster.Event{{Type: muster.EvTaskSucceeded, Task: rc.a.Task, Attempt: st.winner.cand.Attempt, Reason: "race won with no change needed"}}
	}
	return rc.integrateKept(ctx, st.winner, retry)
}

// integrateKept integrates a winner that has no worker (it finished
// before an interruption): a conflict or a red merge fails the race (a
// retry races again) rather than take a fix round in a clone it no
// longer holds.
func (rc *racer) integrateKept(ctx context.Context, e *entry, retry bool) []muster.Event {
	w := rc.worker(e.cand)
	w.base = e.base
	l := w.integrate(ctx, e.commit)
	switch {
	case l.err != nil && ctx.Err() != nil:
		return w.cancelled(ctx)
	case errors.Is(l.err, muster.ErrBranchMoved):
		return w.stopRun(l.err)
	case l.err != nil:
		return w.fail("race: muster could not integrate the winner: "+bound(l.err.Error(), 400), false)
	case len(l.conflicts) > 0:
		return w.fail("race: the winner conflicts on integration: "+strings.Join(l.conflicts, ", "), retry)
	case l.failed != "":
		return w.fail("race: the winner "+l.failed, retry)
	}
	return []muster.Event{{Type: muster.EvTaskSucceeded, Task: rc.a.Task, Attempt: e.cand.Attempt, Commit: l.merged}}
}

// diff is a candidate's change as a unified diff.
func (rc *racer) diff(ctx context.Context, e *entry) (string, error) {
	k, ok := rc.d.opts.Workspace.(interface {
		RaceDiff(ctx context.Context, base, commit string) (string, error)
	})
	if !ok || e.commit == "" {
		return "", nil
	}
	return k.RaceDiff(context.WithoutCancel(ctx), e.base, e.commit)
}

// diffStatOf counts a unified diff's added and deleted lines and files,
// as git diff --numstat does (a binary file counts no lines).
func diffStatOf(diff string) muster.DiffStat {
	var s muster.DiffStat
	header := false
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			s.Files++
			header = true
		case strings.HasPrefix(l, "@@"):
			header = false
		case header:
		case strings.HasPrefix(l, "+"):
			s.Added++
		case strings.HasPrefix(l, "-"):
			s.Deleted++
		}
	}
	return s
}

// raceStart is what starts a race, journaled before any candidate runs:
// a lease per candidate, the race with its candidates, the task's start
// (and a warning when the budget runs fewer candidates than asked).
func raceStart(a engine.Action) []muster.Event {
	var evs []muster.Event
	for _, c := range a.Race {
		evs = append(evs, muster.Event{Type: muster.EvExecutorLeased, Task: a.Task, Executor: c.Executor, Clone: c.Clone, Role: a.Role})
	}
	if a.Short != "" {
		evs = append(evs, muster.Event{Type: muster.EvWarning, Task: a.Task, Message: a.Short})
	}
	first := a.Attempt
	if len(a.Race) > 0 {
		first = a.Race[0].Attempt
	}
	return append(evs,
		muster.Event{Type: muster.EvRaceStarted, Task: a.Task, Attempt: first, Race: a.Race, Round: a.RaceRound, Reason: a.Short},
		muster.Event{Type: muster.EvTaskStarted, Task: a.Task, Attempt: a.Attempt, Executor: a.Executor, Clone: a.Clone, Role: a.Role})
}

// beforeIntegration is what an accepted commit passes before it goes to
// the integration queue: the user's repository untouched (tampered), and
// for a race candidate the racer's verdict (once: a later round of the
// winner goes straight on). nil: go on.
func (w *worker) beforeIntegration(ctx context.Context, commit string) []muster.Event {
	if tampered := w.tampered(ctx); tampered != nil {
		return tampered
	}
	if w.race == nil || w.raceSubmitted {
		return nil
	}
	w.raceSubmitted = true
	return w.race.submit(ctx, w, commit)
}

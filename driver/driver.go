// Package driver is the imperative shell around the engine. One loop
// goroutine owns the engine state: it asks engine.Decide what to do,
// appends the events that carry each action out to the journal (fsynced)
// and only then applies them, and starts one worker goroutine per
// attempt. Workers never touch the state; they send events back on a
// channel. The loop returns only after every worker has returned.
package driver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// groupWindow is how long the loop waits for more worker reports before
// it makes a batch durable: short against an fsync (about a millisecond)
// and against any agent's work.
const groupWindow = 300 * time.Microsecond

// groupJournal is a journal that can write events now and make them
// durable later with one sync (group commit). Write may keep the events,
// not the slice: the loop reuses it.
type groupJournal interface {
	Write(es []*muster.Event) error
	Sync() error
}

// message is what workers send to the loop.
type message struct {
	events []muster.Event
	// done marks the worker's last message.
	done bool
	// lease asks for a clone of a role (reviewers); the loop answers on reply.
	lease *leaseRequest
	// splice asks the loop to validate and plan a delegating task's new
	// tasks; the loop answers on its reply channel.
	splice *spliceRequest
	// durable asks the loop to make events durable now; it answers nil
	// once they are synced, or why they are not.
	durable chan error
	// fatal stops the run: an environment error no task can fix (the run
	// branch moved outside muster, a panic). Every attempt is cancelled,
	// the run is recorded interrupted, and Run returns fatal.
	fatal error
}

type spliceRequest struct {
	parent *muster.Task
	dir    string // the delegating coder's out/
	reply  chan error
}

type leaseRequest struct {
	task  muster.TaskID
	role  muster.Role
	avoid string
	// avoidAll (a race's judge) are executors to avoid where another
	// has a free clone.
	avoidAll []string
	// exec, when set, asks for a clone of that executor (prefer, when
	// free): a coder's fix round after its clone went back to the crew.
	exec   string
	prefer int
	reply  chan engine.Lease
}

// Driver runs one run.
type Driver struct {
	opts  Options
	logs  *attemptLogs
	state *engine.State
	clock muster.Clock
	msgs  chan message
	wg    sync.WaitGroup
	q     queue // the integration queue (integrate.go)
	// cancels holds each running attempt's cancel function, by task.
	cancels map[muster.TaskID]context.CancelCauseFunc
	// landing are the tasks whose change is committed and on its way to
	// the run branch (budget.go: the run's budget does not stop them).
	landing map[muster.TaskID]bool
	pending []*muster.Event // worker events waiting for the next batch (groupcommit.go)
	// unsynced is set while events are written but not yet durable.
	unsynced bool
	// fatal, once set, stops the run (see message.fatal).
	fatal error
	// waiters are workers waiting for the next sync (message.durable).
	waiters []chan error
	// unseen are events written but not yet synced: OnEvent sees them
	// after the sync.
	unseen []*muster.Event
	crash  *crasher
	// gc caches gate results per (gate, commit); notes is the run's
	// notes file; handoffs are what finished tasks left (loop only).
	gc       gateCache
	setups   setups
	notes    *notes
	handoffs map[muster.TaskID]handoff
	// crew holds the executors that joined mid-run (crew.go).
	crew crew
}

// Run drives the run to its end. It returns the final state; the error is
// muster.ErrInterrupted when ctx was cancelled (the run is resumable).
func Run(ctx context.Context, opts Options) (*engine.State, error) {
	d := &Driver{opts: opts, clock: opts.Clock, msgs: make(chan message, 256), cancels: map[muster.TaskID]context.CancelCauseFunc{}}
	if d.clock == nil {
		d.clock = muster.SystemClock{}
	}
	if opts.ScratchDir == "" {
		return nil, errors.New("driver: ScratchDir is required")
	}
	if len(opts.Replayed) == 0 && (opts.Plan == nil || opts.Config == nil) {
		// Without a config the engine decides nothing, and the loop
		// would wait for ever.
		return nil, errors.New("driver: Plan and Config are required for a new run")
	}
	c, err := parseCrash(opts.CrashAt)
	if err != nil {
		return nil, err
	}
	d.crash = c
	d.notes = &notes{path: opts.NotesFile, red: d.red()}
	d.logs = &attemptLogs{dir: opts.LogDir, redact: d.red().String, clock: d.clock}
	if d.notes.path == "" {
		d.notes.path = filepath.Join(filepath.Dir(filepath.Clean(opts.ScratchDir)), "notes.md")
	}
	for i := range opts.Replayed {
		d.observe(&opts.Replayed[i])
	}
	return d.runRecovered(ctx)
}

// runRecovered runs the loop; a panic in it (the loop goroutine: the
// engine, the journal, OnEvent) stops the run cleanly: every attempt is
// cancelled (its agent stopped) and waited for, RunInterrupted is
// appended straight to the journal, and the error is a *muster.PanicError
// (exit 3).
func (d *Driver) runRecovered(ctx context.Context) (st *engine.State, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		pe, ok := r.(*muster.PanicError)
		if !ok {
			pe = &muster.PanicError{Where: "the driver loop", Value: r, Stack: string(debug.Stack())}
			d.abortCause(pe)
		}
		e := &muster.Event{Type: muster.EvRunInterrupted, Time: d.clock.Now().UTC(), Reason: pe.Error()}
		var jerr error
		if g, ok := d.opts.Journal.(groupJournal); ok {
			if jerr = g.Write([]*muster.Event{e}); jerr == nil {
				jerr = g.Sync()
			}
		} else {
			jerr = d.opts.Journal.Append(e)
		}
		if st = d.state; st != nil {
			st.RunState = muster.RunInterrupted
		}
		err = &muster.Error{Code: muster.CodeInternal, Op: "run stopped", Err: errors.Join(pe, jerr)}
	}()
	return d.run(ctx)
}

func (d *Driver) run(ctx context.Context) (*engine.State, error) {
	var err error
	if len(d.opts.Replayed) > 0 {
		d.state, err = engine.Replay(d.opts.Replayed)
		if err != nil {
			return nil, fmt.Errorf("replay journal: %w", err)
		}
	} else {
		d.state = engine.NewState()
	}
	if len(d.opts.Replayed) == 0 {
		if err := d.emit(
			muster.Event{Type: muster.EvRunStarted, Schema: muster.SchemaVersion, Run: d.opts.RunID, Plan: d.opts.PlanPath,
				Base: d.opts.Base, Branch: d.opts.Branch, Ref: d.opts.Ref, Config: d.opts.Config, Owner: d.opts.Owner},
			muster.Event{Type: muster.EvTasksPlanned, Tasks: d.opts.Plan.Tasks, Canon: d.opts.PlanCanon, Expected: d.opts.Expected},
		); err != nil {
			return d.state, err
		}
	} else if err := d.recover(ctx); err != nil {
		return d.state, err
	}
	for _, w := range d.opts.Warnings {
		if err := d.emit(muster.Event{Type: muster.EvWarning, Message: w}); err != nil {
			return d.state, err
		}
	}
	// The plan-wide gates on the base, after setup, before any task:
	// what fails there is said now, and a gate or setup that cannot run
	// stops the run before any agent spends anything.
	// (Warnings, and Blocked events of a gate muster's proxy refused.)
	evs, err := d.baseGates(ctx)
	for _, e := range evs {
		if err := d.emit(e); err != nil {
			return d.state, err
		}
	}
	if err != nil {
		d.fatal = err
	}
	// The run's start (or resumption) is durable, and shown, at once.
	if err := d.sync(); err != nil {
		return d.state, err
	}

	// Each worker goroutine lives for one attempt; the loop below waits
	// for all of them before it returns. On a panic they are cancelled
	// first (waiting for them as they are would wait for ever), and the
	// panic goes on to runRecovered with the stack where it happened.
	defer func() {
		if r := recover(); r != nil {
			pe := &muster.PanicError{Where: "the driver loop", Value: r, Stack: string(debug.Stack())}
			d.abortCause(pe)
			panic(pe)
		}
		d.wg.Wait()
	}()
	interrupted := false
	for {
		if !interrupted && (ctx.Err() != nil || d.fatal != nil) {
			interrupted = true
			cause := muster.ErrInterrupted
			if d.fatal != nil {
				cause = d.fatal
			}
			for _, cancel := range d.cancels {
				cancel(cause)
			}
		}
		if interrupted && len(d.cancels) == 0 {
			if err := d.drain(); err != nil {
				return d.state, err
			}
			if err := d.flush(); err != nil {
				return d.state, err
			}
			reason := causeText(ctx)
			if d.fatal != nil {
				reason = d.fatal.Error()
			}
			err := d.emit(muster.Event{Type: muster.EvRunInterrupted, Reason: reason})
			if err == nil {
				err = d.sync()
			}
			if err != nil {
				return d.state, err
			}
			if d.fatal != nil {
				return d.state, &muster.Error{Code: muster.CodeInternal, Op: "run stopped", Err: d.fatal}
			}
			return d.state, muster.ErrInterrupted
		}
		var wake time.Time
		if !interrupted {
			dec, finished, err := d.decide(ctx)
			if err != nil {
				d.abort()
				return d.state, err
			}
			if finished {
				return d.state, nil
			}
			if len(dec.Actions) > 0 {
				continue
			}
			wake = dec.WakeAt
		}
		if err := d.wait(ctx, wake); err != nil {
			d.abort()
			return d.state, err
		}
	}
}

// decide asks the engine what to do and does it; it reports whether the
// run ended. With nothing to do, it says what the run waits for, if the
// engine names it.
func (d *Driver) decide(ctx context.Context) (engine.Decision, bool, error) {
	dec := engine.Decide(d.state, engine.Input{Now: d.clock.Now()})
	finished, err := d.act(ctx, dec.Actions)
	if err == nil && !finished && len(dec.Actions) == 0 {
		err = d.waiting(dec.Waiting)
	}
	return dec, finished, err
}

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c.Error()
	}
	return "interrupted"
}

// abort cancels every worker after a journal failure; nothing more can be
// recorded, so the run is left to resume.
func (d *Driver) abort() { d.abortCause(muster.ErrInterrupted) }

// abortCause is abort with the cause the attempts are cancelled with.
func (d *Driver) abortCause(cause error) {
	d.answer(errJournal)
	for _, cancel := range d.cancels {
		cancel(cause)
	}
	// Discards what workers still send, so that none blocks on a full
	// channel, and refuses what they ask, so that none waits for a reply;
	// it ends when msgs is closed below, once every worker has returned.
	go func() {
		for m := range d.msgs {
			refuse(m)
		}
	}()
	d.wg.Wait()
	close(d.msgs)
}

// refuse answers a worker's request once the loop can grant nothing: no
// reviewer clone, and a splice that was not recorded.
func refuse(m message) {
	if m.lease != nil {
		m.lease.reply <- engine.Lease{}
	}
	if m.splice != nil {
		m.splice.reply <- errJournal
	}
	if m.durable != nil {
		m.durable <- errJournal
	}
}

// drain takes the messages left in the channel without blocking.
func (d *Driver) drain() error {
	for {
		select {
		case m := <-d.msgs:
			if err := d.handle(m); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// wait blocks until a worker reports, ctx ends, or wake passes, then
// takes every message already queued, and makes them durable together.
func (d *Driver) wait(ctx context.Context, wake time.Time) error {
	// Nothing written stays unsynced while the loop sleeps.
	if err := d.sync(); err != nil {
		return err
	}
	var timer <-chan time.Time
	if !wake.IsZero() {
		t := time.NewTimer(time.Until(wake))
		defer t.Stop()
		timer = t.C
	}
	done, joins := ctx.Done(), d.opts.Joins
	if ctx.Err() != nil || d.fatal != nil {
		done, joins = nil, nil // already interrupting: wait for workers only
	}
	select {
	case m := <-d.msgs:
		if err := d.handle(m); err != nil {
			return err
		}
	case j := <-joins:
		if err := d.flush(); err != nil {
			return err
		}
		return d.join(j)
	case <-done:
		return nil
	case <-timer:
		return nil
	}
	// Group commit: gather what other workers report within a short
	// window, so that one fsync covers many events. The window ends early
	// once every running attempt has reported its end, and when a worker
	// waits for a sync (it holds the integration queue: nothing more
	// comes until it is answered).
	window := time.NewTimer(groupWindow)
	defer window.Stop()
	for n := 0; n < 1024 && len(d.cancels) > 0 && len(d.waiters) == 0; n++ {
		select {
		case m := <-d.msgs:
			if err := d.handle(m); err != nil {
				return err
			}
			continue
		case <-window.C:
		}
		break
	}
	for n := 0; n < 1024; n++ {
		select {
		case m := <-d.msgs:
			if err := d.handle(m); err != nil {
				return err
			}
			continue
		default:
		}
		break
	}
	return d.flush()
}

func (d *Driver) handle(m message) error {
	for i := range m.events {
		d.pending = append(d.pending, &m.events[i])
	}
	if m.lease != nil {
		// A lease must see the state as of the events before it.
		if err := d.flush(); err != nil {
			m.lease.reply <- engine.Lease{}
			return err
		}
		if err := d.grant(m.lease); err != nil {
			return err
		}
	}
	if m.splice != nil {
		if err := d.flush(); err != nil {
			m.splice.reply <- errors.Join(errJournal, err)
			return err
		}
		err := d.planFragment(m.splice)
		if err == nil {
			// Durable before the delegator's commit lands; a failed sync
			// stops the run like any other journal failure.
			if serr := d.sync(); serr != nil {
				m.splice.reply <- errors.Join(errJournal, serr)
				return serr
			}
		}
		m.splice.reply <- err
		if errors.Is(err, errJournal) {
			return err
		}
	}
	if m.durable != nil {
		// Answered by the next sync, which the loop makes before it
		// sleeps or starts anything: one fsync covers the request and
		// whatever else the loop records meanwhile.
		if err := d.flush(); err != nil {
			m.durable <- errors.Join(errJournal, err)
			return err
		}
		d.waiters = append(d.waiters, m.durable)
	}
	if m.fatal != nil && d.fatal == nil {
		d.fatal = m.fatal
	}
	if m.done {
		for i := range m.events {
			if e := &m.events[i]; e.Type == muster.EvTaskSucceeded || e.Type == muster.EvTaskFailed || e.Type == muster.EvTaskCancelled {
				delete(d.cancels, e.Task)
			}
		}
	}
	return nil
}

// act carries out the engine's actions. It reports whether the run ended.
func (d *Driver) act(ctx context.Context, actions []engine.Action) (bool, error) {
	var evs []muster.Event
	var starts []engine.Action
	for _, a := range actions {
		switch a.Kind {
		case engine.ActStart:
			if a.Racing() {
				evs = append(evs, raceStart(a)...)
				starts = append(starts, a)
				continue
			}
			evs = append(evs,
				muster.Event{Type: muster.EvExecutorLeased, Task: a.Task, Executor: a.Executor, Clone: a.Clone, Role: a.Role},
				muster.Event{Type: muster.EvTaskStarted, Task: a.Task, Attempt: a.Attempt, Executor: a.Executor, Clone: a.Clone, Role: a.Role})
			starts = append(starts, a)
		case engine.ActSkip:
			evs = append(evs, muster.Event{Type: muster.EvTaskSkipped, Task: a.Task, Reason: a.Reason})
		case engine.ActCancel:
			evs = append(evs, muster.Event{Type: muster.EvTaskCancelled, Task: a.Task, Reason: a.Reason, Cause: a.Cause})
		case engine.ActFinish:
			// The branch must still be where muster left it: an agent
			// that moved it after the last integration fails the run.
			if _, err := d.opts.Workspace.Tip(context.WithoutCancel(ctx)); err != nil {
				d.fatal = err
				return false, d.emit(evs...)
			}
			evs = append(evs, muster.Event{Type: muster.EvRunFinished, State: a.State})
			if err := d.emit(evs...); err != nil {
				return false, err
			}
			return true, d.sync()
		}
	}
	if err := d.emit(evs...); err != nil {
		return false, err
	}
	if len(starts) > 0 {
		if err := d.sync(); err != nil {
			return false, err
		}
	}
	for _, a := range starts {
		if a.Racing() {
			d.startRace(ctx, a)
			continue
		}
		d.start(ctx, a)
	}
	return false, nil
}

// start launches the worker goroutine of one attempt. It lives until the
// attempt ends (or is cancelled) and its last message is sent.
func (d *Driver) start(ctx context.Context, a engine.Action) {
	actx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	d.cancels[a.Task] = cancel
	ts := d.state.Tasks[a.Task]
	w := &worker{d: d, a: a, task: ts.Task, cfg: d.state.Config, runID: d.state.Run, followup: ts.Followup, prFeedback: ts.Feedback}
	w.scratch = filepath.Join(d.opts.ScratchDir, fmt.Sprintf("%s-%d", a.Task, a.Attempt))
	w.deps = d.depOutputs(w.task)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel(nil)
		d.msgs <- message{events: w.finish(w.runRecovered(actx)), done: true}
	}()
}

// finish adds the release of the clone the attempt holds (its first, or
// the one a fix round leased after its commit waited: clonelease.go) to
// its final events. (Apart from start's goroutine, whose stack frame
// would hold the event, 848 bytes, for the whole attempt.)
//
//go:noinline
func (w *worker) finish(final []muster.Event) []muster.Event {
	if w.released {
		return final
	}
	return append(final, muster.Event{Type: muster.EvExecutorRelease, Task: w.a.Task, Executor: w.a.Executor, Clone: w.a.Clone, Role: w.a.Role})
}

// runRecovered runs the attempt; a panic in it becomes a clean stop of the
// run (a *muster.PanicError): the attempt is cancelled, like every other.
func (w *worker) runRecovered(ctx context.Context) (final []muster.Event) {
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(*muster.PanicError) // re-raised on this goroutine (gate handlers)
			if !ok {
				pe = &muster.PanicError{Where: fmt.Sprintf("the attempt of task %s", w.a.Task), Value: r, Stack: string(debug.Stack())}
			}
			final = w.stopRun(pe)
		}
	}()
	return stopped(ctx, w.guarded(ctx))
}

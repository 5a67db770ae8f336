package driver_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/mock"
)

// syncedJournal is a group-commit journal that remembers the last
// sequence number made durable; failAfter > 0 fails every Sync once that
// many have succeeded.
type syncedJournal struct {
	mock.Journal
	mu        sync.Mutex
	synced    int64
	syncs     int
	failAfter int
}

func (j *syncedJournal) Write(es []*muster.Event) error {
	for _, e := range es {
		if err := j.Append(e); err != nil {
			return err
		}
	}
	return nil
}

func (j *syncedJournal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failAfter > 0 && j.syncs >= j.failAfter {
		return errors.New("the journal file was deleted while the run went on")
	}
	j.syncs++
	j.synced = int64(len(j.Events))
	return nil
}

func (j *syncedJournal) durable() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.synced
}

// OnEvent (the --json stream and the live view) sees an event only once
// the journal has synced it, every event, in order.
func TestOnEventSeesOnlyDurableEvents(t *testing.T) {
	h := newHarness(t, plan("a", "b", "c:a,b", "d:c"), crew(2))
	j := &syncedJournal{}
	h.opts.Journal = j
	var seen []int64
	h.opts.OnEvent = func(e *muster.Event, s *engine.State) {
		if d := j.durable(); e.Seq > d {
			t.Errorf("OnEvent saw event %d (%s) before its sync (durable up to %d)", e.Seq, e.Type, d)
		}
		seen = append(seen, e.Seq)
	}
	st, err := h.run(t)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s", err, st.RunState)
	}
	if n := len(j.Snapshot()); len(seen) != n {
		t.Fatalf("OnEvent saw %d events, the journal holds %d", len(seen), n)
	}
	for i, s := range seen {
		if s != int64(i+1) {
			t.Fatalf("OnEvent saw event %d at position %d", s, i+1)
		}
	}
}

// A journal that stops syncing (its file deleted with the run directory)
// stops the run as an environment error, and the events it could not
// make durable are never shown.
func TestJournalThatCannotSyncStopsTheRun(t *testing.T) {
	h := newHarness(t, plan("a", "b:a", "c:b"), crew(1))
	j := &syncedJournal{failAfter: 2}
	h.opts.Journal = j
	var last int64
	h.opts.OnEvent = func(e *muster.Event, s *engine.State) { last = e.Seq }
	_, err := h.run(t)
	if err == nil || muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("err %v, want an environment error", err)
	}
	if d := j.durable(); last > d {
		t.Errorf("OnEvent saw event %d, durable only up to %d", last, d)
	}
}

// A panic in an attempt's goroutine (injected at the commit) stops the
// run cleanly: the other attempt's agent is stopped (its context ends),
// the run is recorded interrupted, and the error is an internal one
// (exit 3), not a crash of the process (exit 2).
func TestPanicInAWorkerStopsTheRunCleanly(t *testing.T) {
	h := newHarness(t, plan("a", "b"), crew(2))
	h.opts.CrashAt = "panic:" + driver.CrashCommit
	bRunning := make(chan struct{})
	var bStopped atomic.Bool
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Task.ID == "b" {
			close(bRunning)
			<-ctx.Done()
			bStopped.Store(true)
			return nil, ctx.Err()
		}
		<-bRunning
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	checkPanicStop(t, h, st, err, "the attempt of task a")
	if !bStopped.Load() {
		t.Error("b's agent was not stopped")
	}
	if s := st.Tasks["b"].State; s != muster.StateCancelled {
		t.Errorf("b %s, want cancelled", s)
	}
}

// A panic on the loop goroutine (here in OnEvent) stops the run as
// cleanly: every agent is stopped and RunInterrupted is recorded.
func TestPanicInTheLoopStopsTheRunCleanly(t *testing.T) {
	h := newHarness(t, plan("a", "b"), crew(2))
	started := make(chan struct{}, 2)
	var stopped atomic.Int32
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		stopped.Add(1)
		return nil, ctx.Err()
	}
	var phases atomic.Int32
	h.opts.OnEvent = func(e *muster.Event, s *engine.State) {
		if e.Type == muster.EvPhase && phases.Add(1) == 2 {
			<-started
			<-started
			panic("a bug in a view")
		}
	}
	st, err := h.run(t)
	checkPanicStop(t, h, st, err, "the driver loop")
	if n := stopped.Load(); n != 2 {
		t.Errorf("%d agents stopped, want 2", n)
	}
}

func checkPanicStop(t *testing.T, h *harness, st *engine.State, err error, where string) {
	t.Helper()
	var pe *muster.PanicError
	if !errors.As(err, &pe) || muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("err %v, want an internal error carrying the panic", err)
	}
	if pe.Where != where || pe.Stack == "" {
		t.Errorf("panic in %q (stack %d bytes), want %q", pe.Where, len(pe.Stack), where)
	}
	evs := h.j.Snapshot()
	if last := evs[len(evs)-1]; last.Type != muster.EvRunInterrupted || !strings.Contains(last.Reason, "panic") {
		t.Errorf("last event %s %q, want RunInterrupted naming the panic", last.Type, last.Reason)
	}
	if st == nil {
		t.Fatal("no state")
	}
}

// A journaled agent that is no longer that process is left alone, and
// the resume says so in the journal.
func TestOrphanLeftAloneIsAWarning(t *testing.T) {
	h := newHarness(t, plan("a"), crew(1))
	cut := cutAfterAgent(t, h)
	h2 := resumeFrom(t, h, cut)
	h2.opts.KillOrphan = func(p muster.Process) error { return errors.New("pid 1001 is another process now") }
	st, err := h2.run(t)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s", err, st.RunState)
	}
	for _, e := range h2.j.Snapshot()[len(cut):] {
		if e.Type == muster.EvWarning && strings.Contains(e.Message, "left process group 1001 alone: pid 1001 is another process now") {
			return
		}
	}
	t.Error("no warning about the orphan left alone")
}

// cutAfterAgent returns h's journal cut right after its agent (pid 1001)
// was journaled.
func cutAfterAgent(t *testing.T, h *harness) []muster.Event {
	t.Helper()
	release := make(chan struct{})
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		emit(muster.Record{Type: muster.RecPID, PID: 1000 + req.Clone})
		<-release
		return &muster.ExecResult{}, nil
	}
	var seq int64
	cut := journalCutAt(t, h, release, func(e *muster.Event, s *engine.State) bool {
		if e.Type == muster.EvAgentStarted && seq == 0 {
			seq = e.Seq
			return true
		}
		return false
	})
	return cut[:seq]
}

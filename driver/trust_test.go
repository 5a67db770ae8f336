package driver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/engine"
)

// cutAfter runs h to its end and returns the journal up to and including
// the first event match holds for: what a kill -9 right after that
// event's sync leaves. Attempts of block wait until then.
func cutAfter(t *testing.T, h *harness, block muster.TaskID, match func(e *muster.Event) bool) []muster.Event {
	t.Helper()
	release := make(chan struct{})
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Task.ID == block {
			<-release
		}
		return &muster.ExecResult{}, nil
	}
	var seq int64
	cut := journalCutAt(t, h, release, func(e *muster.Event, s *engine.State) bool {
		if seq == 0 && match(e) {
			seq = e.Seq
			return true
		}
		return false
	})
	if seq == 0 {
		t.Fatal("the cut point was never reached")
	}
	return cut[:seq]
}

func integrating(task muster.TaskID) func(e *muster.Event) bool {
	return func(e *muster.Event) bool { return e.Type == muster.EvIntegrating && e.Task == task }
}

// Killed after muster announced a move of the run branch (Integrating)
// and made it, before Integrated: the branch at the announced commit is
// muster's own move; resume records it and does not run the task again.
func TestResumeRecordsTheMoveItAnnounced(t *testing.T) {
	h := newHarness(t, plan("a", "b"), crew(2))
	cut := cutAfter(t, h, "b", integrating("a"))
	h2 := resumeFrom(t, h, cut)
	h2.ws.SetTip("c-a") // the move went through
	var mu sync.Mutex   // two clones run at once
	ran := map[muster.TaskID]int{}
	h2.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		mu.Lock()
		ran[req.Task.ID]++
		mu.Unlock()
		return &muster.ExecResult{}, nil
	}
	st, err := driver.Run(context.Background(), h2.opts)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s", err, st.RunState)
	}
	if ran["a"] != 0 || ran["b"] != 1 {
		t.Errorf("attempts after resume: %v, want b only", ran)
	}
	if c := st.Tasks["a"].Commit; c != "c-a" {
		t.Errorf("a's commit %q, want c-a", c)
	}
	if ty := strings.Join(types(h2.j.Snapshot()[len(cut):], "a"), ","); !strings.HasPrefix(ty, "Integrated,TaskSucceeded") {
		t.Errorf("a's events after the resume: %s", ty)
	}
}

// Killed after the announcement, before the move: the branch is still at
// the journal's tip, so the task runs again.
func TestResumeRerunsAMoveThatDidNotHappen(t *testing.T) {
	h := newHarness(t, plan("a", "b"), crew(2))
	cut := cutAfter(t, h, "b", integrating("a"))
	h2 := resumeFrom(t, h, cut) // branch at the journal's tip (the base)
	var mu sync.Mutex           // two clones run at once
	ran := map[muster.TaskID]int{}
	h2.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		mu.Lock()
		ran[req.Task.ID]++
		mu.Unlock()
		return &muster.ExecResult{}, nil
	}
	st, err := driver.Run(context.Background(), h2.opts)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s", err, st.RunState)
	}
	if ran["a"] != 1 {
		t.Errorf("a ran %d times after the resume, want 1", ran["a"])
	}
}

// A branch found anywhere but the journal's tip or the announced move
// (say, at a commit an agent made with a forged trailer) stops the
// resume before anything is recorded or run.
func TestResumeRefusesABranchMovedElsewhere(t *testing.T) {
	h := newHarness(t, plan("a", "b"), crew(2))
	cut := cutAfter(t, h, "b", integrating("a"))
	h2 := resumeFrom(t, h, cut)
	h2.ws.SetTip("forged")
	h2.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		t.Errorf("%s ran on a moved branch", req.Task.ID)
		return &muster.ExecResult{}, nil
	}
	_, err := driver.Run(context.Background(), h2.opts)
	if !errors.Is(err, muster.ErrBranchMoved) || muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("err %v, want an environment error for the moved branch", err)
	}
	if n := len(h2.j.Snapshot()); n != len(cut) {
		t.Errorf("the resume appended %d events to the journal", n-len(cut))
	}
}

// movedErr is what the git workspace returns when the CAS of the run
// branch finds it moved.
type movedErr struct{ want, got string }

func (e movedErr) Error() string {
	return fmt.Sprintf("run branch muster/r1 was moved outside muster: muster last left it at %s, it is now at %s", e.want, e.got)
}
func (e movedErr) Is(target error) bool { return target == muster.ErrBranchMoved }

// An agent moves the run branch mid-run: the compare-and-swap of the next
// integration fails, and the run stops as an environment error naming
// the last known tip; the other running attempt is cancelled, the run is
// recorded interrupted, and nothing is built on the moved branch.
func TestBranchMovedMidRunStopsTheRun(t *testing.T) {
	h := newHarness(t, plan("a", "b", "c:a"), crew(2))
	h.ws.AdvanceFn = func(ctx context.Context, merged, expectedTip string) error {
		return movedErr{want: expectedTip, got: "f00"}
	}
	bStarted := make(chan struct{})
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Task.ID == "b" {
			close(bStarted)
			<-ctx.Done() // b works until the run stops it
			return nil, ctx.Err()
		}
		<-bStarted
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	if !errors.Is(err, muster.ErrBranchMoved) || muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("err %v, want an environment error for the moved branch", err)
	}
	if !strings.Contains(err.Error(), "muster last left it at base") {
		t.Errorf("error %q does not name the last known tip", err)
	}
	if st.RunState != muster.RunInterrupted {
		t.Errorf("run state %s, want interrupted", st.RunState)
	}
	for id, want := range map[muster.TaskID]muster.TaskState{"a": muster.StateCancelled, "b": muster.StateCancelled, "c": muster.StatePending} {
		if got := st.Tasks[id].State; got != want {
			t.Errorf("task %s: %s (%s), want %s", id, got, st.Tasks[id].Reason, want)
		}
	}
	evs := h.j.Snapshot()
	last := evs[len(evs)-1]
	if last.Type != muster.EvRunInterrupted || !strings.Contains(last.Reason, "moved outside muster") {
		t.Errorf("last event %s %q, want RunInterrupted naming the moved branch", last.Type, last.Reason)
	}
	for _, e := range evs {
		if e.Type == muster.EvIntegrated || e.Type == muster.EvRunFinished {
			t.Errorf("%s recorded on a moved branch", e.Type)
		}
	}
}

// An agent that moves the run branch after the last integration (its
// own task failed, so nothing integrates after it) is caught before the
// run is recorded finished.
func TestBranchMovedAfterTheLastIntegrationStopsTheRun(t *testing.T) {
	h := newHarness(t, plan("a"), crew(1))
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		return nil, &muster.AgentError{Class: muster.FailInvalid, Message: "no"}
	}
	h.ws.TipFn = func(ctx context.Context) (string, error) { return "", movedErr{want: "base", got: "f00"} }
	st, err := h.run(t)
	if !errors.Is(err, muster.ErrBranchMoved) || muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("err %v, want an environment error for the moved branch", err)
	}
	if st.RunState != muster.RunInterrupted {
		t.Errorf("run state %s, want interrupted", st.RunState)
	}
}

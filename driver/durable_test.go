package driver_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/mock"
)

func TestResumeKillsSurvivingAgentsFirst(t *testing.T) {
	h := newHarness(t, plan("a", "b"), crew(2))
	h.opts.Identify = func(pid int) muster.Process { return muster.Process{PID: pid, Start: uint64(pid) * 10, Boot: "boot-1"} }
	gate := make(chan struct{})
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		emit(muster.Record{Type: muster.RecPID, PID: 1000 + req.Clone})
		<-gate
		return &muster.ExecResult{}, nil
	}
	cut := journalCutAt(t, h, gate, func(e *muster.Event, s *engine.State) bool {
		return e.Type == muster.EvAgentStarted && len(s.Procs) == 2
	})
	h2 := resumeFrom(t, h, cut)
	var mu sync.Mutex
	var killed []int
	ran := false
	h2.opts.KillOrphan = func(p muster.Process) error {
		mu.Lock()
		defer mu.Unlock()
		if ran {
			t.Error("an orphan was killed after a new attempt started")
		}
		if p.Start != uint64(p.PID)*10 || p.Boot != "boot-1" {
			t.Errorf("orphan %+v: not the identity journaled", p)
		}
		killed = append(killed, p.PID)
		return nil
	}
	h2.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		mu.Lock()
		ran = true
		mu.Unlock()
		return &muster.ExecResult{}, nil
	}
	st, err := driver.Run(context.Background(), h2.opts)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s", err, st.RunState)
	}
	slices.Sort(killed)
	if !slices.Equal(killed, []int{1001, 1002}) {
		t.Fatalf("killed %v, want the two agents' pids", killed)
	}
}

func TestDelegatedTasksAreSplicedAndRun(t *testing.T) {
	p := plan("lead", "after:lead")
	p.Tasks[0].Delegates = true
	h := newHarness(t, p, crew(3))
	var mu sync.Mutex
	var ran []string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		mu.Lock()
		ran = append(ran, string(req.Task.ID))
		mu.Unlock()
		if req.Task.ID == "lead" {
			if req.PlanOut == "" {
				t.Error("no PlanOut for a delegating task")
			}
			if err := os.WriteFile(req.PlanOut, []byte("## [ ] n1: One\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
		return &muster.ExecResult{}, nil
	}
	h.opts.Fragment = func(parent *muster.Task, path string, data []byte, existing []*muster.Task) ([]*muster.Task, error) {
		if parent.ID != "lead" || len(existing) != 2 {
			t.Errorf("fragment of %s against %d tasks", parent.ID, len(existing))
		}
		return []*muster.Task{{ID: "n1", Title: "One", Parent: "lead"}, {ID: "n2", Title: "Two", Parent: "lead"}}, nil
	}
	st, err := h.run(t)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s", err, st.RunState)
	}
	if len(st.Tasks) != 4 || st.Tasks["n1"].State != muster.StateSucceeded || st.Tasks["n2"].State != muster.StateSucceeded {
		t.Fatalf("tasks %v", st.Counts())
	}
	// Replaying the journal rebuilds the grown plan.
	re, err := engine.Replay(h.j.Snapshot())
	if err != nil || len(re.Tasks) != 4 || !re.Done() {
		t.Fatalf("replay: %v, %d tasks", err, len(re.Tasks))
	}
	if !slices.Equal(re.Tasks["n1"].Task.After, []muster.TaskID{"lead"}) {
		t.Errorf("n1 after %v, want lead", re.Tasks["n1"].Task.After)
	}
}

func TestRejectedFragmentFailsTheDelegatorBeforeIntegration(t *testing.T) {
	p := plan("lead")
	p.Tasks[0].Delegates = true
	h := newHarness(t, p, crew(1))
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		return &muster.ExecResult{}, os.WriteFile(req.PlanOut, []byte("junk"), 0o644)
	}
	h.opts.Fragment = func(*muster.Task, string, []byte, []*muster.Task) ([]*muster.Task, error) {
		return nil, errors.New("plan-out.md:1: not a task\nplan-out.md:2: another")
	}
	st, _ := h.run(t)
	lead := st.Tasks["lead"]
	if lead.State != muster.StateFailed || lead.Reason != "delegated tasks rejected: plan-out.md:1: not a task; plan-out.md:2: another" {
		t.Fatalf("lead %s: %q", lead.State, lead.Reason)
	}
	if strings.Contains(strings.Join(types(h.j.Snapshot(), "lead"), ","), "Integrated") {
		t.Error("the rejected delegator was integrated")
	}
}

func TestTaskBudgetCancelsTheAttempt(t *testing.T) {
	p := plan("a")
	p.Tasks[0].Budget.USDMicros = 500
	h := newHarness(t, p, crew(1))
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		emit(muster.Record{Type: muster.RecUsage, Usage: muster.Usage{InputTokens: 10, CostMicros: 1000}})
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	st, err := h.run(t)
	if err != nil {
		t.Fatal(err)
	}
	a := st.Tasks["a"]
	if a.State != muster.StateCancelled || !strings.HasPrefix(a.Reason, "budget: task a spent $0.0010 of its $0.0005") {
		t.Fatalf("a %s: %q", a.State, a.Reason)
	}
	if st.RunState != muster.RunFailed {
		t.Errorf("run %s", st.RunState)
	}
}

// syncFailJournal is a group-commit journal whose first Sync after a
// spliced TasksPlanned is written fails; every other Sync succeeds.
type syncFailJournal struct {
	mock.Journal
	mu      sync.Mutex
	spliced bool
	failed  bool
}

func (j *syncFailJournal) Write(es []*muster.Event) error {
	for _, e := range es {
		if e.Type == muster.EvTasksPlanned && e.Task != "" {
			j.mu.Lock()
			j.spliced = true
			j.mu.Unlock()
		}
		if err := j.Append(e); err != nil {
			return err
		}
	}
	return nil
}

func (j *syncFailJournal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.spliced && !j.failed {
		j.failed = true
		return errors.New("disk full")
	}
	return nil
}

func TestSpliceThatCannotBeMadeDurableStopsTheRun(t *testing.T) {
	p := plan("lead")
	p.Tasks[0].Delegates = true
	h := newHarness(t, p, crew(2))
	j := &syncFailJournal{}
	h.opts.Journal = j
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		return &muster.ExecResult{}, os.WriteFile(req.PlanOut, []byte("## [ ] n1: One\n"), 0o644)
	}
	h.opts.Fragment = func(*muster.Task, string, []byte, []*muster.Task) ([]*muster.Task, error) {
		return []*muster.Task{{ID: "n1", Title: "One", Parent: "lead"}}, nil
	}
	var integrated atomic.Int32
	h.ws.AdvanceFn = func(ctx context.Context, merged, expectedTip string) error {
		integrated.Add(1)
		return nil
	}
	_, err := h.run(t)
	if err == nil || muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("err %v, want the journal failure", err)
	}
	if n := integrated.Load(); n != 0 {
		t.Errorf("the delegator's commit landed %d times although its tasks were not recorded", n)
	}
	for _, e := range j.Snapshot() {
		if e.Type == muster.EvTaskFailed && strings.Contains(e.Reason, "rejected") {
			t.Errorf("a journal failure was recorded as a rejected fragment: %q", e.Reason)
		}
	}
}

// A run budget crossed while a task's commit is in the integration queue
// (its change reviewed and committed, the plan-wide gates running on the
// moved tip) stops the agents still working, not the landing: the
// committed task integrates and succeeds (issue 25: a budget stop
// discarded a task that was already reviewed and committed).
func TestBudgetStopLandsACommittedTask(t *testing.T) {
	p := plan("a", "b", "c")
	cfg := crew(3)
	cfg.Run.BudgetUSDMicros = 1000
	cfg.Gates = []muster.GateSpec{{Name: "build", Command: "make"}}
	h := newHarness(t, p, cfg)
	aStarted, cLanded, queued, bStopped := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		switch req.Task.ID {
		case "c": // lands after a's clone was prepared: a's base is behind
			<-aStarted
			return &muster.ExecResult{}, nil
		case "a": // commits on the base c's landing moved
			close(aStarted)
			<-cLanded
			emit(muster.Record{Type: muster.RecUsage, Usage: muster.Usage{InputTokens: 10, CostMicros: 100}})
			return &muster.ExecResult{}, nil
		}
		<-queued // b crosses the run's budget while a's gates run in the queue
		emit(muster.Record{Type: muster.RecUsage, Usage: muster.Usage{InputTokens: 10, CostMicros: 5000}})
		<-ctx.Done()
		close(bStopped)
		return nil, context.Cause(ctx)
	}
	h.opts.OnEvent = func(e *muster.Event, _ *engine.State) {
		if e.Type == muster.EvTaskSucceeded && e.Task == "c" {
			close(cLanded)
		}
	}
	var inQueue sync.Once
	h.opts.Gates = &mock.Gates{RunFn: func(ctx context.Context, dir string, g muster.GateSpec, timeout time.Duration) muster.GateResult {
		// a's gate on the moved tip, in the queue's own clone.
		if strings.Contains(dir, "muster-queue") {
			inQueue.Do(func() {
				close(queued)
				<-bStopped
			})
		}
		return muster.GateResult{Name: g.Name, Command: g.Command, Passed: ctx.Err() == nil}
	}}
	st, _ := h.run(t)
	if a := st.Tasks["a"]; a.State != muster.StateSucceeded {
		t.Fatalf("a %s: %q, want it landed", a.State, a.Reason)
	}
	if b := st.Tasks["b"]; b.State != muster.StateCancelled || b.Cause != muster.CauseBudget {
		t.Fatalf("b %s (%s): %q, want cancelled by the budget", b.State, b.Cause, b.Reason)
	}
}

package driver_test

import (
	"context"
	"errors"
	"fmt"
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

func plan(specs ...string) *muster.Plan {
	p := &muster.Plan{Source: "plan.md", Brief: "the brief"}
	for _, s := range specs {
		id, deps, _ := strings.Cut(s, ":")
		t := &muster.Task{ID: muster.TaskID(id), Title: "title " + id, Prompt: "do " + id}
		for _, d := range strings.Split(deps, ",") {
			if d != "" {
				t.After = append(t.After, muster.TaskID(d))
			}
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p
}

func crew(clones int, roles ...muster.Role) *muster.Config {
	return &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "x", Kind: "mock", Clones: clones, Roles: roles}}}
}

// coderAndReviewer is a crew of one coder clone "x" and one reviewer
// clone "rev".
func coderAndReviewer() *muster.Config {
	return &muster.Config{Executors: []*muster.ExecutorSpec{
		{Name: "x", Clones: 1, Roles: []muster.Role{"coder"}},
		{Name: "rev", Clones: 1, Roles: []muster.Role{"reviewer"}},
	}}
}

type harness struct {
	opts driver.Options
	j    *mock.Journal
	ws   *mock.Workspace
	ex   *mock.Executor
}

func newHarness(t *testing.T, p *muster.Plan, cfg *muster.Config) *harness {
	h := &harness{j: &mock.Journal{}, ws: &mock.Workspace{}, ex: &mock.Executor{}}
	h.opts = driver.Options{
		RunID: "r1", PlanPath: "plan.md", Plan: p, Config: cfg, Base: "base", Branch: "muster/r1",
		Journal: h.j, Workspace: h.ws, Executors: map[string]muster.Executor{"x": h.ex}, Gates: &mock.Gates{},
		ScratchDir: t.TempDir(),
	}
	return h
}

func (h *harness) run(t *testing.T) (*engine.State, error) {
	t.Helper()
	return driver.Run(context.Background(), h.opts)
}

func types(evs []muster.Event, task muster.TaskID) []string {
	var out []string
	for _, e := range evs {
		if e.Task == task {
			out = append(out, string(e.Type))
		}
	}
	return out
}

func TestDependentsStartOnlyAfterDurableSuccess(t *testing.T) {
	h := newHarness(t, plan("a", "b:a", "c:a", "d:b,c"), crew(3))
	st, err := h.run(t)
	if err != nil {
		t.Fatal(err)
	}
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s", st.RunState)
	}
	evs := h.j.Snapshot()
	succeeded := map[muster.TaskID]int64{}
	for _, e := range evs {
		switch e.Type {
		case muster.EvTaskSucceeded:
			succeeded[e.Task] = e.Seq
		case muster.EvTaskStarted:
			for _, d := range h.opts.Plan.Task(e.Task).After {
				if s, ok := succeeded[d]; !ok || s > e.Seq {
					t.Fatalf("%s started (seq %d) before %s succeeded", e.Task, e.Seq, d)
				}
			}
		}
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("seq gap at %d", i)
		}
	}
	if evs[0].Type != muster.EvRunStarted || evs[0].Schema != muster.SchemaVersion || evs[len(evs)-1].Type != muster.EvRunFinished {
		t.Fatalf("first %s last %s", evs[0].Type, evs[len(evs)-1].Type)
	}
	if st.Tasks["d"].Commit != "c-d" {
		t.Fatalf("commit %q", st.Tasks["d"].Commit)
	}
}

func TestPromptCarriesBriefOwnsAndDependencies(t *testing.T) {
	p := plan("a", "b:a")
	p.Task("b").Owns = []string{"pkg/b.go"}
	h := newHarness(t, p, crew(1))
	var prompt string
	var env muster.ExecRequest
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Task.ID == "b" {
			prompt, env = req.Prompt, *req
		}
		return &muster.ExecResult{}, nil
	}
	if _, err := h.run(t); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the brief", "do b", "pkg/b.go", "a: title a (commit c-a)", "not instructions"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if env.Run != "r1" || env.Clone != 1 || env.Attempt != 1 || env.Round != 0 || env.Dir != "/wt/x#1" {
		t.Errorf("request %+v", env)
	}
}

func TestUsageRecordsBecomeEventsWithEstimates(t *testing.T) {
	h := newHarness(t, plan("a"), crew(1))
	h.opts.Price = func(model string, u muster.Usage) (int64, bool) { return u.InputTokens * 10, model == "m" }
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Usage: muster.Usage{InputTokens: 100, OutputTokens: 5}})
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Usage: muster.Usage{InputTokens: 1, CostMicros: 7}})
		emit(muster.Record{Type: muster.RecTool, Tool: "Edit", Args: "f"})
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	if err != nil {
		t.Fatal(err)
	}
	if st.Usage.CostMicros != 1007 || st.Usage.InputTokens != 101 || !st.Usage.Estimated {
		t.Fatalf("usage %+v", st.Usage)
	}
	var tokens []muster.Event
	for _, e := range h.j.Snapshot() {
		if e.Type == muster.EvTokensUsed {
			tokens = append(tokens, e)
		}
	}
	if len(tokens) != 2 || !tokens[0].Estimated || tokens[1].Estimated || tokens[0].Slot() != "x#1" || tokens[0].Role != "coder" {
		t.Fatalf("tokens %+v", tokens)
	}
}

func TestInterruptCancelsRunningAttempts(t *testing.T) {
	h := newHarness(t, plan("a", "b", "c:a"), crew(2))
	started := make(chan struct{}, 2)
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { <-started; <-started; cancel(muster.ErrInterrupted) }()
	st, err := driver.Run(ctx, h.opts)
	if !errors.Is(err, muster.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if st.RunState != muster.RunInterrupted || st.Tasks["a"].State != muster.StateCancelled || st.Tasks["c"].State != muster.StatePending {
		t.Fatalf("run %s a %s c %s", st.RunState, st.Tasks["a"].State, st.Tasks["c"].State)
	}
	if len(st.Leases) != 0 {
		t.Fatalf("leases left: %v", st.Leases)
	}
	// Resume from the journal: the cancelled and pending tasks run again.
	h2 := newHarness(t, h.opts.Plan, h.opts.Config)
	h2.j.Events = h.j.Snapshot()
	h2.opts.Replayed = h.j.Snapshot()
	h2.ws.SetTip(journalTip(t, h2.opts.Replayed))
	st, err = driver.Run(context.Background(), h2.opts)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("resume: %v %s", err, st.RunState)
	}
	if n := st.Tasks["a"].Attempts; n != 2 {
		t.Fatalf("a attempts %d", n)
	}
}

// journalCutAt runs h to its end and returns the journal as it stood
// when cut first held for an applied event: what a crash at that moment
// leaves. The first run's agents wait for release, which it closes then.
func journalCutAt(t *testing.T, h *harness, release chan struct{}, cut func(e *muster.Event, s *engine.State) bool) []muster.Event {
	t.Helper()
	var snap []muster.Event
	var once sync.Once
	h.opts.OnEvent = func(e *muster.Event, s *engine.State) {
		if cut(e, s) {
			once.Do(func() { snap = h.j.Snapshot(); close(release) })
		}
	}
	if _, err := h.run(t); err != nil {
		t.Fatal(err)
	}
	return snap
}

// journalTip returns the run branch's tip as a journal records it.
func journalTip(t *testing.T, evs []muster.Event) string {
	t.Helper()
	st, err := engine.Replay(evs)
	if err != nil {
		t.Fatal(err)
	}
	return st.Tip
}

// resumeFrom returns a harness for h's plan and crew that resumes from
// the journal cut.
func resumeFrom(t *testing.T, h *harness, cut []muster.Event) *harness {
	h2 := newHarness(t, h.opts.Plan, h.opts.Config)
	h2.j.Events = append([]muster.Event(nil), cut...)
	h2.opts.Replayed = cut
	// The branch is where the journal says muster left it.
	h2.ws.SetTip(journalTip(t, cut))
	return h2
}

func TestResumeAfterCrashReconcilesWithTheJournal(t *testing.T) {
	// A journal cut right after a's Integrated event, b still running:
	// the crash fell between a's integration and its success.
	h := newHarness(t, plan("a", "b", "c:a,b"), crew(2))
	gate := make(chan struct{})
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Task.ID == "b" {
			<-gate
		}
		return &muster.ExecResult{}, nil
	}
	var seq int64
	cut := journalCutAt(t, h, gate, func(e *muster.Event, s *engine.State) bool {
		if e.Type == muster.EvIntegrated && e.Task == "a" {
			seq = e.Seq
			return true
		}
		return false
	})
	cut = cut[:seq]
	h2 := resumeFrom(t, h, cut)
	var attempts atomic.Int32
	h2.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Task.ID == "a" {
			t.Error("a ran again although the journal records its integration")
		}
		attempts.Add(1)
		return &muster.ExecResult{}, nil
	}
	st, err := driver.Run(context.Background(), h2.opts)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s", err, st.RunState)
	}
	if st.Tasks["a"].Commit != "c-a" || attempts.Load() != 2 {
		t.Fatalf("a commit %q, attempts %d", st.Tasks["a"].Commit, attempts.Load())
	}
	ty := types(h2.j.Snapshot(), "b")
	if !strings.Contains(strings.Join(ty, ","), "TaskCancelled") {
		t.Fatalf("b's orphan attempt not cancelled: %v", ty)
	}
}

func TestViolationFixRoundThenFail(t *testing.T) {
	for _, policy := range muster.OnViolationPolicies {
		t.Run(string(policy), func(t *testing.T) {
			p := plan("a")
			p.Task("a").Owns = []string{"mine.go"}
			cfg := crew(1)
			cfg.Run.OnViolation = policy
			h := newHarness(t, p, cfg)
			var reverted []string
			var rounds []int
			var prompts []string
			h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
				rounds = append(rounds, req.Round)
				prompts = append(prompts, req.Prompt)
				return &muster.ExecResult{}, nil
			}
			h.ws.ViolationsFn = func(ctx context.Context, dir string, c *muster.Change, owns []string) []string {
				if len(reverted) > 0 {
					return nil
				}
				return []string{"theirs.go"}
			}
			h.ws.RevertFn = func(ctx context.Context, dir, base string, paths []string) error {
				reverted = paths
				return nil
			}
			st, _ := h.run(t)
			if fmt.Sprint(rounds) != "[0 1]" || !strings.Contains(prompts[1], "theirs.go") || !strings.Contains(prompts[1], "keep to your paths") {
				t.Fatalf("rounds %v, prompt:\n%s", rounds, prompts[len(prompts)-1])
			}
			if fmt.Sprint(reverted) != "[theirs.go]" {
				t.Fatalf("reverted %v", reverted)
			}
			a := st.Tasks["a"]
			if policy == muster.OnViolationFail && (a.State != muster.StateFailed || !strings.Contains(a.Reason, "theirs.go")) {
				t.Fatalf("fail policy: %s %q", a.State, a.Reason)
			}
			if policy == muster.OnViolationDiscard && a.State != muster.StateSucceeded {
				t.Fatalf("discard policy: %s %q", a.State, a.Reason)
			}
		})
	}
}

func TestEmptyChange(t *testing.T) {
	cases := []struct {
		name      string
		satisfied bool
		noop      muster.NoopPolicy
		want      muster.TaskState
	}{
		{"satisfied", true, "", muster.StateSucceeded},
		{"nothing", false, "", muster.StateFailed},
		{"noop complete", false, muster.NoopComplete, muster.StateSucceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := crew(1)
			cfg.Run.Noop = c.noop
			h := newHarness(t, plan("a"), cfg)
			h.ws.ChangeFn = func(context.Context, string, string) (*muster.Change, error) { return &muster.Change{}, nil }
			h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
				return &muster.ExecResult{Satisfied: c.satisfied}, nil
			}
			st, _ := h.run(t)
			if a := st.Tasks["a"]; a.State != c.want || a.Commit != "" {
				t.Fatalf("%s %q commit %q", a.State, a.Reason, a.Commit)
			}
		})
	}
}

func TestConflictRetriesOnceOnNewTip(t *testing.T) {
	for _, conflicts := range []int{1, 2} {
		t.Run(fmt.Sprint(conflicts), func(t *testing.T) {
			h := newHarness(t, plan("a"), crew(1))
			n := 0
			h.ws.MergeFn = func(ctx context.Context, commit, base string) (string, []string, error) {
				n++
				if n <= conflicts {
					return "", []string{"x.go"}, nil
				}
				return "tip", nil, nil
			}
			var prompts []string
			h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
				prompts = append(prompts, req.Prompt)
				return &muster.ExecResult{}, nil
			}
			st, _ := h.run(t)
			a := st.Tasks["a"]
			if len(prompts) != 2 || !strings.Contains(prompts[1], "conflicted") {
				t.Fatalf("prompts %d", len(prompts))
			}
			if conflicts == 1 && (a.State != muster.StateSucceeded || a.Commit != "tip") {
				t.Fatalf("%s %q", a.State, a.Commit)
			}
			if conflicts == 2 && (a.State != muster.StateFailed || !strings.Contains(a.Reason, "x.go")) {
				t.Fatalf("%s %q", a.State, a.Reason)
			}
		})
	}
}

func TestGateFailureFixRound(t *testing.T) {
	p := plan("a")
	p.Task("a").Gates = []string{"make check"}
	cfg := crew(1)
	cfg.Gates = []muster.GateSpec{{Name: "build", Command: "make"}}
	h := newHarness(t, p, cfg)
	runs := 0
	h.opts.Gates = &mock.Gates{RunFn: func(ctx context.Context, dir string, g muster.GateSpec, timeout time.Duration) muster.GateResult {
		runs++
		pass := g.Command != "make check" || runs > 2
		return muster.GateResult{Name: g.Name, Command: g.Command, Passed: pass, Output: "FAIL: TestX\nexpected 1"}
	}}
	var prompts []string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		prompts = append(prompts, req.Prompt)
		return &muster.ExecResult{}, nil
	}
	st, _ := h.run(t)
	if st.Tasks["a"].State != muster.StateSucceeded || len(prompts) != 2 || !strings.Contains(prompts[1], "FAIL: TestX") {
		t.Fatalf("%s, %d prompts", st.Tasks["a"].State, len(prompts))
	}
}

func TestStalemateEndsTheLoop(t *testing.T) {
	p := plan("a")
	p.Task("a").Gates = []string{"false"}
	h := newHarness(t, p, crew(1))
	h.opts.Gates = &mock.Gates{RunFn: func(ctx context.Context, dir string, g muster.GateSpec, timeout time.Duration) muster.GateResult {
		return muster.GateResult{Name: g.Name, Passed: false, ExitCode: 1,
			Output: "=== RUN   TestCountExtra\n--- FAIL: TestCountExtra (0.00s)\n    count_test.go:12: count = 3, want 2\nFAIL\nFAIL\tx\t0.01s\n"}
	}}
	h.ws.DiffFn = func(context.Context, string, string) (string, error) { return "same diff", nil }
	calls := 0
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		calls++
		return &muster.ExecResult{}, nil
	}
	st, _ := h.run(t)
	// The reason names the check that kept failing, down to the test.
	want := "stalemate: fix round 1 changed nothing; still failing: gate a/gate1 failed: TestCountExtra: count = 3, want 2"
	if a := st.Tasks["a"]; a.State != muster.StateFailed || a.Reason != want || calls != 2 {
		t.Fatalf("%s %q after %d calls, want %q", a.State, a.Reason, calls, want)
	}
}

// A gate whose program is not installed (exit 127) stops the run at once
// as an environment error: no fix round can install it, and the task is
// not charged (cancelled; a resume runs it again).
func TestGateCommandNotFoundFailsAtOnce(t *testing.T) {
	p := plan("a")
	p.Task("a").Gates = []string{"gotestsum ./..."}
	h := newHarness(t, p, crew(1))
	h.opts.Gates = &mock.Gates{RunFn: func(ctx context.Context, dir string, g muster.GateSpec, timeout time.Duration) muster.GateResult {
		return muster.GateResult{Name: g.Name, Command: g.Command, ExitCode: 127, Output: "sh: 1: gotestsum: not found\n"}
	}}
	calls := 0
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		calls++
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	a := st.Tasks["a"]
	if a.State != muster.StateCancelled || calls != 1 || !strings.Contains(a.Reason, "environment error: gate a/gate1 (gotestsum ./...) could not run, command not found (exit 127): sh: 1: gotestsum: not found") {
		t.Fatalf("%s %q after %d calls", a.State, a.Reason, calls)
	}
	if err == nil || !strings.Contains(err.Error(), "command not found (exit 127)") {
		t.Fatalf("the run's error: %v", err)
	}
}

func TestReviewFindingFixedThenApproved(t *testing.T) {
	h := newHarness(t, plan("a"), coderAndReviewer())
	reviews := 0
	h.opts.Executors["rev"] = &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		reviews++
		if req.Role != muster.RoleReviewer || req.Authority != muster.AuthorityRead || req.DiffFile == "" {
			t.Errorf("review request %+v", req)
		}
		if reviews == 1 {
			return &muster.ExecResult{Reviewed: true, Findings: []muster.Finding{{Severity: "critical", Title: "nil deref"}, {Severity: "minor", Title: "naming"}}}, nil
		}
		return &muster.ExecResult{Reviewed: true}, nil
	}}
	var prompts []string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		prompts = append(prompts, req.Prompt)
		return &muster.ExecResult{}, nil
	}
	st, _ := h.run(t)
	if st.Tasks["a"].State != muster.StateSucceeded || reviews != 2 || len(prompts) != 2 {
		t.Fatalf("%s reviews %d prompts %d", st.Tasks["a"].State, reviews, len(prompts))
	}
	if !strings.Contains(prompts[1], "nil deref") || strings.Contains(prompts[1], "naming") {
		t.Fatalf("fix prompt:\n%s", prompts[1])
	}
	leased := 0
	for _, e := range h.j.Snapshot() {
		if e.Type == muster.EvExecutorLeased && e.Role == muster.RoleReviewer {
			leased++
			if e.Executor != "rev" {
				t.Fatalf("reviewer leased on %s", e.Executor)
			}
		}
	}
	if leased != 2 || len(st.Leases) != 0 {
		t.Fatalf("reviewer leases %d, left %v", leased, st.Leases)
	}
}

func TestAgentFailureRetriesThenSkipsDependents(t *testing.T) {
	p := plan("a", "b:a")
	p.Task("a").Retries = 1
	h := newHarness(t, p, crew(1))
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		return &muster.ExecResult{ExitCode: 2, Tail: "boom"}, &muster.AgentError{Class: muster.FailExit, ExitCode: 2, Message: "exit status 2"}
	}
	st, _ := h.run(t)
	a, b := st.Tasks["a"], st.Tasks["b"]
	if a.State != muster.StateFailed || a.Attempts != 2 || !strings.Contains(a.Reason, "boom") {
		t.Fatalf("a %s %d %q", a.State, a.Attempts, a.Reason)
	}
	if b.State != muster.StateSkipped || b.Reason != "dependency a failed" {
		t.Fatalf("b %s %q", b.State, b.Reason)
	}
}

// An auth error is not retried: the run stops on it (see
// TestAuthFailureStopsTheCredential), the task not charged.
func TestAuthErrorIsNotRetried(t *testing.T) {
	p := plan("a")
	p.Task("a").Retries = 3
	h := newHarness(t, p, crew(1))
	calls := 0
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		calls++
		return nil, &muster.AgentError{Class: muster.FailAuth, Message: "invalid x-api-key"}
	}
	st, _ := h.run(t)
	if calls != 1 || st.Tasks["a"].State != muster.StateCancelled {
		t.Fatalf("calls %d state %s", calls, st.Tasks["a"].State)
	}
}

func TestJournalFailureStopsTheRun(t *testing.T) {
	h := newHarness(t, plan("a", "b"), crew(2))
	h.j.FailAt = 5
	_, err := h.run(t)
	if err == nil || muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("err %v", err)
	}
}

func TestFindingsOfAFailingReviewerStillCount(t *testing.T) {
	h := newHarness(t, plan("a"), coderAndReviewer())
	reviews := 0
	h.opts.Executors["rev"] = &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		reviews++
		if reviews == 1 {
			// A critical finding, then a crash.
			return &muster.ExecResult{ExitCode: 2, Reviewed: true, Findings: []muster.Finding{{Severity: "critical", Title: "data loss"}}},
				&muster.AgentError{Class: muster.FailExit, ExitCode: 2}
		}
		return &muster.ExecResult{Reviewed: true}, nil
	}}
	var prompts []string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		prompts = append(prompts, req.Prompt)
		return &muster.ExecResult{}, nil
	}
	st, _ := h.run(t)
	if st.Tasks["a"].State != muster.StateSucceeded || len(prompts) != 2 || !strings.Contains(prompts[1], "data loss") {
		t.Fatalf("state %s, %d prompts", st.Tasks["a"].State, len(prompts))
	}
}

func TestUsageLimitPausesTheExecutorAsAJournalFact(t *testing.T) {
	for _, crewSize := range []int{1, 2} {
		t.Run(fmt.Sprint(crewSize, " executors"), func(t *testing.T) {
			cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "x", Clones: 1}}}
			if crewSize == 2 {
				cfg.Executors = append(cfg.Executors, &muster.ExecutorSpec{Name: "y", Clones: 1})
			}
			h := newHarness(t, plan("a"), cfg)
			reset := time.Now().Add(300 * time.Millisecond)
			var ran []string
			limited := &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
				ran = append(ran, req.Slot())
				if len(ran) == 1 {
					return nil, &muster.AgentError{Class: muster.FailUsageLimit, ResetAt: reset, Message: "usage limit reached"}
				}
				return &muster.ExecResult{}, nil
			}}
			h.opts.Executors["x"] = limited
			h.opts.Executors["y"] = limited
			st, err := h.run(t)
			if err != nil || st.Tasks["a"].State != muster.StateSucceeded {
				t.Fatalf("%v %s %q", err, st.Tasks["a"].State, st.Tasks["a"].Reason)
			}
			want := "[x#1 x#1]"
			if crewSize == 2 {
				want = "[x#1 y#1]" // the other executor takes it at once
			}
			if fmt.Sprint(ran) != want {
				t.Fatalf("ran on %v, want %s", ran, want)
			}
			// The pause is in the journal, so a replay knows it.
			re, err := engine.Replay(h.j.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			if until := re.BlockedUntil["x"]; !until.Equal(reset.UTC()) {
				t.Fatalf("replayed pause %v, want %v", until, reset.UTC())
			}
		})
	}
}

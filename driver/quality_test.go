package driver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/mock"
)

// events returns the journal's events of one type.
func events(h *harness, typ muster.EventType) []muster.Event {
	var out []muster.Event
	for _, e := range h.j.Snapshot() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// gateFn makes mock gates from a function of (dir, gate name, call number).
func gateFn(f func(dir, name string, n int) (bool, string)) *mock.Gates {
	var mu sync.Mutex
	calls := map[string]int{}
	return &mock.Gates{RunFn: func(ctx context.Context, dir string, g muster.GateSpec, timeout time.Duration) muster.GateResult {
		mu.Lock()
		calls[dir+g.Name]++
		n := calls[dir+g.Name]
		mu.Unlock()
		ok, out := f(dir, g.Name, n)
		return muster.GateResult{Name: g.Name, Command: g.Command, Passed: ok, Output: out}
	}}
}

func TestGateFailureFixedInRoundTwo(t *testing.T) {
	p := plan("a")
	p.Task("a").Gates = []string{"make test"}
	h := newHarness(t, p, crew(1))
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) {
		if strings.HasPrefix(dir, "/co/") {
			return false, "fails on base" // an acceptance test that discriminates
		}
		return n >= 2, "FAIL: expected 3"
	})
	var prompts []string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		prompts = append(prompts, req.Prompt)
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	if err != nil || st.Tasks["a"].State != muster.StateSucceeded {
		t.Fatalf("%v %s %s", err, st.Tasks["a"].State, st.Tasks["a"].Reason)
	}
	if len(prompts) != 2 || !strings.Contains(prompts[1], "FAIL: expected 3") || !strings.Contains(prompts[1], "Fix round 1") {
		t.Fatalf("prompts %d: %q", len(prompts), prompts)
	}
	fr := events(h, muster.EvFixRound)
	if len(fr) != 1 || fr[0].Round != 1 || !strings.Contains(fr[0].Reason, "a/gate1") {
		t.Fatalf("fix rounds %+v", fr)
	}
	if w := events(h, muster.EvWarning); len(w) != 0 {
		t.Fatalf("warnings %+v", w)
	}
	g := events(h, muster.EvGateRan)
	if len(g) != 2 || g[0].Baseline != "fail" || *g[0].Passed || !*g[1].Passed {
		t.Fatalf("gates %+v", g)
	}
}

func TestTaskGatePassingOnBaseWarns(t *testing.T) {
	p := plan("a")
	p.Task("a").Gates = []string{"true"}
	h := newHarness(t, p, crew(1))
	st, err := h.run(t)
	if err != nil || st.Tasks["a"].State != muster.StateSucceeded {
		t.Fatal(err)
	}
	w := events(h, muster.EvWarning)
	if len(w) != 1 || !strings.Contains(w[0].Message, "does not discriminate") {
		t.Fatalf("warnings %+v", w)
	}
}

func TestPreExistingFailureNotCharged(t *testing.T) {
	p := plan("a")
	cfg := crew(1)
	cfg.Gates = []muster.GateSpec{{Name: "lint", Command: "lint"}, {Name: "test", Command: "go test ./..."}}
	h := newHarness(t, p, cfg)
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) {
		if name == "lint" {
			return false, "lint: 3 problems" // broken before the run
		}
		if strings.HasPrefix(dir, "/co/") {
			return false, "--- FAIL: TestOld (0.00s)\nFAIL"
		}
		if n == 1 {
			return false, "--- FAIL: TestOld (0.00s)\n--- FAIL: TestNew (0.00s)\nFAIL"
		}
		return false, "--- FAIL: TestOld (0.00s)\nFAIL"
	})
	st, err := h.run(t)
	if err != nil || st.Tasks["a"].State != muster.StateSucceeded {
		t.Fatalf("%v %s %s", err, st.Tasks["a"].State, st.Tasks["a"].Reason)
	}
	fr := events(h, muster.EvFixRound)
	if len(fr) != 1 || !strings.Contains(fr[0].Reason, "gate test") {
		t.Fatalf("fix rounds %+v", fr)
	}
	var charged, free int
	for _, g := range events(h, muster.EvGateRan) {
		if g.Baseline != "fail" {
			t.Fatalf("baseline %+v", g)
		}
		if g.NotCharged != strings.HasPrefix(g.Reason, "pre-existing") {
			t.Errorf("NotCharged %v with reason %q", g.NotCharged, g.Reason)
		}
		if g.NotCharged {
			free++
		} else if g.Reason == "newly failing: TestNew" {
			charged++
		}
	}
	if charged != 1 || free != 3 {
		t.Fatalf("charged %d free %d", charged, free)
	}
}

// reviewCrew has coder x and reviewer r.
func reviewCrew() *muster.Config {
	return &muster.Config{Executors: []*muster.ExecutorSpec{
		{Name: "x", Kind: "mock", Clones: 1},
		{Name: "r", Kind: "mock", Clones: 1, Roles: []muster.Role{"reviewer"}},
	}}
}

func TestCriticalFindingFixedThenApproved(t *testing.T) {
	h := newHarness(t, plan("a"), reviewCrew())
	var rounds []int
	h.opts.Executors["r"] = &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		rounds = append(rounds, req.Round)
		if req.Role != muster.RoleReviewer || req.Authority != muster.AuthorityRead {
			t.Errorf("reviewer request %s %s", req.Role, req.Authority)
		}
		if req.Round == 0 {
			return &muster.ExecResult{Reviewed: true, Findings: []muster.Finding{
				{Severity: "critical", Title: "drops errors", Path: "f"}, {Severity: "minor", Title: "typo"}}}, nil
		}
		return &muster.ExecResult{Reviewed: true}, nil
	}}
	var prompt string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		prompt = req.Prompt
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	if err != nil || st.Tasks["a"].State != muster.StateSucceeded {
		t.Fatalf("%v %s", err, st.Tasks["a"].Reason)
	}
	if len(rounds) != 2 || !strings.Contains(prompt, "drops errors") || strings.Contains(prompt, "typo") {
		t.Fatalf("review rounds %v, prompt:\n%s", rounds, prompt)
	}
	rv := events(h, muster.EvReviewed)
	if len(rv) != 2 || len(rv[0].Findings) != 2 || rv[0].Executor != "r" {
		t.Fatalf("reviewed %+v", rv)
	}
}

func TestFindingReturningUnchangedIsStalemate(t *testing.T) {
	cfg := reviewCrew()
	cfg.Run.MaxRounds = 5
	h := newHarness(t, plan("a"), cfg)
	h.opts.Executors["r"] = &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		return &muster.ExecResult{Reviewed: true, Findings: []muster.Finding{{Severity: "major", Title: "no tests", Path: "f", Line: req.Round}}}, nil
	}}
	coder := 0
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		coder++
		return &muster.ExecResult{}, nil
	}
	st, _ := h.run(t)
	a := st.Tasks["a"]
	if a.State != muster.StateFailed || !strings.HasPrefix(a.Reason, "stalemate") || coder != 2 {
		t.Fatalf("%s %q after %d coder runs", a.State, a.Reason, coder)
	}
}

func TestRoundThatChangesNothingIsStalemate(t *testing.T) {
	p := plan("a")
	p.Task("a").Gates = []string{"check"}
	h := newHarness(t, p, crew(1))
	h.ws.DiffFn = func(ctx context.Context, dir, base string) (string, error) { return "same diff", nil }
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) { return false, "no" })
	coder := 0
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		coder++
		return &muster.ExecResult{}, nil
	}
	st, _ := h.run(t)
	if a := st.Tasks["a"]; a.State != muster.StateFailed || !strings.HasPrefix(a.Reason, "stalemate") || coder != 2 {
		t.Fatalf("%s %q after %d runs", a.State, a.Reason, coder)
	}
}

func TestEmptyChangeAskedOnce(t *testing.T) {
	h := newHarness(t, plan("a", "b"), crew(1))
	h.ws.ChangeFn = func(ctx context.Context, dir, base string) (*muster.Change, error) { return &muster.Change{}, nil }
	runs := map[muster.TaskID]int{}
	var asked string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		runs[req.Task.ID]++
		if req.Round == 1 {
			asked = req.Prompt
			if req.Task.ID == "a" {
				emit(muster.Record{Type: muster.RecMessage, Text: "the function exists already"})
				return &muster.ExecResult{Satisfied: true}, nil
			}
		}
		return &muster.ExecResult{}, nil
	}
	st, _ := h.run(t)
	if a := st.Tasks["a"]; a.State != muster.StateSucceeded || !strings.Contains(a.Reason, "the function exists already") {
		t.Fatalf("a %s %q", a.State, a.Reason)
	}
	if b := st.Tasks["b"]; b.State != muster.StateFailed || !strings.HasPrefix(b.Reason, "no change") {
		t.Fatalf("b %s %q", b.State, b.Reason)
	}
	if runs["a"] != 2 || runs["b"] != 2 || !strings.Contains(asked, "already holds") {
		t.Fatalf("runs %v", runs)
	}
}

func TestLoopResolvesOnAttemptTwo(t *testing.T) {
	p := plan("a", "b:a")
	p.Task("a").Loop = &muster.LoopSpec{Check: "./check", Max: 3}
	h := newHarness(t, p, crew(1))
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) {
		return name != "a/check" || n >= 2, "check said no"
	})
	var attempts []int
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Task.ID == "a" {
			attempts = append(attempts, req.Round)
			if !strings.Contains(req.Prompt, "check said no") {
				t.Errorf("repair prompt lacks the check output:\n%s", req.Prompt)
			}
		}
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	if err != nil || st.Tasks["a"].State != muster.StateSucceeded || st.Tasks["b"].State != muster.StateSucceeded {
		t.Fatalf("%v a %s %q", err, st.Tasks["a"].State, st.Tasks["a"].Reason)
	}
	if len(attempts) != 1 || attempts[0] != 1 {
		t.Fatalf("repair attempts %v", attempts)
	}
	la := events(h, muster.EvLoopAttempt)
	le := events(h, muster.EvLoopEnded)
	if len(la) != 2 || *la[0].Passed || !*la[1].Passed || la[1].Round != 2 || len(le) != 1 || le[0].State != "resolved" || le[0].Round != 2 {
		t.Fatalf("attempts %+v ended %+v", la, le)
	}
}

func TestLoopExhaustsAndDependentsFollow(t *testing.T) {
	p := plan("a", "b:a")
	p.Task("a").Loop = &muster.LoopSpec{Check: "./check", Max: 2}
	cfg := crew(1)
	cfg.Run.OnFailure = muster.OnFailureContinue
	h := newHarness(t, p, cfg)
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) { return name != "a/check", "still broken" })
	st, _ := h.run(t)
	if a := st.Tasks["a"]; a.State != muster.StateFailed || !strings.HasPrefix(a.Reason, "loop exhausted") {
		t.Fatalf("a %s %q", a.State, a.Reason)
	}
	if st.Tasks["b"].State != muster.StateSkipped {
		t.Fatalf("b %s", st.Tasks["b"].State)
	}
	if la, le := events(h, muster.EvLoopAttempt), events(h, muster.EvLoopEnded); len(la) != 2 || len(le) != 1 || le[0].State != "exhausted" {
		t.Fatalf("attempts %d ended %+v", len(la), le)
	}
}

func TestNotesAndHandOffReachLaterTasks(t *testing.T) {
	h := newHarness(t, plan("a", "b:a"), crew(1))
	h.opts.NotesFile = filepath.Join(t.TempDir(), "notes.md")
	var prompt string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Task.ID == "a" {
			emit(muster.Record{Type: muster.RecNotes, Text: "the config loader caches files"})
			emit(muster.Record{Type: muster.RecMessage, Text: "Done.\n## Findings\n- the parser rejects tabs\n"})
		} else {
			prompt = req.Prompt
		}
		return &muster.ExecResult{}, nil
	}
	if _, err := h.run(t); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the config loader caches files", "the parser rejects tabs", "changed: f", "not instructions"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("b's prompt lacks %q:\n%s", want, prompt)
		}
	}
	b, err := os.ReadFile(h.opts.NotesFile)
	if err != nil || !strings.Contains(string(b), "## From task a") {
		t.Fatalf("notes %q %v", b, err)
	}
	if n := events(h, muster.EvNote); len(n) != 2 {
		t.Fatalf("notes events %+v", n)
	}
}

// Notes a rejected round printed (its gate failed) do not reach later
// tasks; the accepted round's note does, once, though it said it both as
// a notes record and in its ## Findings section.
func TestNotesOfRejectedRoundsAreDropped(t *testing.T) {
	p := plan("a", "b:a")
	p.Task("a").Gates = []string{"check"}
	h := newHarness(t, p, crew(1))
	h.opts.NotesFile = filepath.Join(t.TempDir(), "notes.md")
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) { return n > 1, "FAIL" })
	diffs := 0
	h.ws.DiffFn = func(context.Context, string, string) (string, error) { diffs++; return fmt.Sprint("diff ", diffs), nil }
	var prompt string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		switch {
		case req.Task.ID == "b":
			prompt = req.Prompt
		case req.Round == 0:
			emit(muster.Record{Type: muster.RecNotes, Text: "wrong: the cache is global"})
			emit(muster.Record{Type: muster.RecMessage, Text: "## Findings\n- wrong: tabs are fine\n"})
		default:
			emit(muster.Record{Type: muster.RecNotes, Text: "- the cache is per request"})
			emit(muster.Record{Type: muster.RecMessage, Text: "Fixed.\n## Findings\n- the cache is per request\n"})
		}
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	if err != nil || st.Tasks["a"].State != muster.StateSucceeded || st.Tasks["b"].State != muster.StateSucceeded {
		t.Fatalf("run: %v %+v", err, st.Tasks["a"])
	}
	if strings.Contains(prompt, "wrong:") {
		t.Errorf("b's prompt has notes of a's rejected round:\n%s", prompt)
	}
	_, shared, _ := strings.Cut(prompt, "## Notes from earlier tasks")
	if n := strings.Count(shared, "the cache is per request"); n != 1 {
		t.Errorf("b's prompt has the accepted note %d times, want once:\n%s", n, prompt)
	}
}

func TestIntegrationFailureOnTipTooIsNotCharged(t *testing.T) {
	// The task that lands second does so on a tip that fails the gate
	// already: not its doing.
	cfg := crew(2)
	cfg.Gates = []muster.GateSpec{{Name: "flaky", Command: "x"}}
	h := newHarness(t, plan("a", "b"), cfg)
	var both sync.WaitGroup // both prepared on the same base
	both.Add(2)
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Round == 0 {
			both.Done()
			both.Wait()
		}
		return &muster.ExecResult{}, nil
	}
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) {
		// Broken on every tree after the first landing, whichever it was.
		// Checkouts are of landed or merged trees; the attempts' own
		// clones (/wt/) are on the base.
		return !strings.HasPrefix(dir, "/co/"), "broken since the first landing"
	})
	st, err := h.run(t)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s b %q", err, st.RunState, st.Tasks["b"].Reason)
	}
	var verified []muster.Event
	for _, g := range events(h, muster.EvGateRan) {
		if g.Phase == "integration" {
			verified = append(verified, g)
		}
	}
	if len(verified) != 1 || *verified[0].Passed || verified[0].Baseline != "fail" || !strings.HasPrefix(verified[0].Reason, "pre-existing") {
		t.Fatalf("integration gates %+v", verified)
	}
	if tip, _ := h.ws.Tip(context.Background()); tip != mock.MergeID("c-b", "c-a") && tip != mock.MergeID("c-a", "c-b") {
		t.Fatalf("tip %s", tip)
	}
}

func TestReviewersPerTaskAreDistinctClones(t *testing.T) {
	cfg := &muster.Config{Run: muster.RunConfig{Reviewers: 2}, Executors: []*muster.ExecutorSpec{
		{Name: "x", Kind: "mock", Clones: 1},
		{Name: "r", Kind: "mock", Clones: 2, Roles: []muster.Role{"reviewer"}},
	}}
	h := newHarness(t, plan("a"), cfg)
	h.opts.Executors["r"] = &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		return &muster.ExecResult{Reviewed: true, Findings: []muster.Finding{{Severity: "minor", Title: "nit"}}}, nil
	}}
	st, err := h.run(t)
	if err != nil || st.Tasks["a"].State != muster.StateSucceeded {
		t.Fatal(err)
	}
	rv := events(h, muster.EvReviewed)
	if len(rv) != 2 || rv[0].Slot() == rv[1].Slot() {
		t.Fatalf("reviews %+v", rv)
	}
	if fr := events(h, muster.EvFixRound); len(fr) != 0 {
		t.Fatalf("minor findings made a fix round: %+v", fr)
	}
	if len(st.Leases) != 0 {
		t.Fatalf("leases left %v", st.Leases)
	}
}

// A change waits up to [run] review_wait for a reviewer of another
// executor rather than have its coder's own executor review it (issue
// 25: a clone reviewed its own change while another reviewer came free
// 0.1 s later). With review_wait = 0 the coder's executor reviews at once.
func TestReviewWaitPrefersAnotherExecutor(t *testing.T) {
	for _, tc := range []struct {
		wait    *time.Duration
		wantRev int
	}{{nil, 2}, {new(time.Duration), 1}} {
		cfg := &muster.Config{Executors: []*muster.ExecutorSpec{
			{Name: "x", Clones: 2, Roles: []muster.Role{"coder", "reviewer"}},
			{Name: "rev", Clones: 1, Roles: []muster.Role{"reviewer"}},
		}}
		cfg.Run.ReviewWait = tc.wait
		h := newHarness(t, plan("a", "b"), cfg)
		var mu sync.Mutex
		by := map[string]int{}
		coded := make(chan struct{}, 2)
		both, xReviewed := make(chan struct{}), make(chan struct{})
		go func() { <-coded; <-coded; close(both) }()
		h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
			if req.Role == muster.RoleReviewer {
				mu.Lock()
				if by["x"]++; by["x"] == 1 {
					close(xReviewed)
				}
				mu.Unlock()
				return &muster.ExecResult{Reviewed: true}, nil
			}
			coded <- struct{}{}
			<-both // both changes ask for a reviewer at about once
			return &muster.ExecResult{}, nil
		}
		h.opts.Executors["rev"] = &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
			mu.Lock()
			by["rev"]++
			mu.Unlock()
			if tc.wait == nil {
				time.Sleep(100 * time.Millisecond) // busy a moment: the other change asks meanwhile
			} else {
				<-xReviewed // busy until the coder's executor reviewed the other change
			}
			return &muster.ExecResult{Reviewed: true}, nil
		}}
		st, _ := h.run(t)
		if st.Tasks["a"].State != muster.StateSucceeded || st.Tasks["b"].State != muster.StateSucceeded {
			t.Fatalf("a %s, b %s", st.Tasks["a"].State, st.Tasks["b"].State)
		}
		if by["rev"] != tc.wantRev || by["rev"]+by["x"] != 2 {
			t.Errorf("review_wait %v: reviews by %v, want %d by rev", tc.wait, by, tc.wantRev)
		}
	}
}

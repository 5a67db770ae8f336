package planner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/mock"
	"github.com/muster-run/muster/planfile"
	"github.com/muster-run/muster/planner"
)

const cyclic = `# Plan: cyc

## [ ] a: A
After: b
Owns: a.txt

## [ ] b: B
After: a
Owns: b.txt
`

const valid = `# Plan: ok

## [ ] a: A
Owns: a.txt
Gate: test -f a.txt

## [ ] b: B
Owns: b.txt

## [ ] c: C
After: a, b
Owns: c.txt
Budget: $1
`

func check(name string, data []byte) (*muster.Plan, muster.Problems) {
	p, probs := planfile.Parse(name, data)
	return p, append(probs, planfile.Validate(p, nil, planfile.Options{})...)
}

// options returns a session over a temp clone with exec as the planner.
func options(t *testing.T, exec *mock.Executor) (planner.Options, *mock.Journal) {
	t.Helper()
	clone := t.TempDir()
	if err := os.WriteFile(filepath.Join(clone, "README.md"), []byte("# Demo\n\nA tiny project.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j := &mock.Journal{}
	spec := &muster.ExecutorSpec{Name: "p", Kind: muster.ExecCommand, Clones: 1, Roles: []muster.Role{muster.RolePlanner}}
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{spec, {Name: "c", Kind: muster.ExecCommand, Clones: 2, Roles: []muster.Role{muster.RoleCoder}}}}
	ws := &mock.Workspace{CheckoutFn: func(ctx context.Context, slot, commit string) (string, error) {
		if slot != "p#1" || commit != "base" {
			t.Errorf("checkout %s at %s, want p#1 at base", slot, commit)
		}
		return clone, nil
	}}
	return planner.Options{Goal: "Add a, b and c.", RunID: "plan-1", Output: "plan.md", Tries: 3, Spec: spec, Executor: exec,
		Workspace: ws, Base: "base", Config: cfg, Journal: j, Check: check, ScratchDir: t.TempDir()}, j
}

// The planner writes a cycle first; told about it, a valid plan.
func TestRunRetriesWithProblems(t *testing.T) {
	var prompts []string
	exec := &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		prompts = append(prompts, req.Prompt)
		if req.Authority != muster.AuthorityRead || req.Role != muster.RolePlanner || req.PlanOut == "" {
			t.Errorf("request: authority %s, role %s, plan out %q", req.Authority, req.Role, req.PlanOut)
		}
		// Confined: the run's paths and the try's out/, home and TMPDIR
		// (never its in/, never the clone).
		if c := req.Confine; c == nil || strings.Join(c.Writable, ",") != "/shared,"+req.Scratch+"/out,"+req.Scratch+"/home,"+req.Scratch+"/tmp" ||
			!strings.HasPrefix(req.PlanOut, req.Scratch) || req.Env["TMPDIR"] != filepath.Join(req.Scratch, "tmp") {
			t.Errorf("confinement %+v, scratch %s, plan out %s, env %v", req.Confine, req.Scratch, req.PlanOut, req.Env)
		}
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Usage: muster.Usage{InputTokens: 100, OutputTokens: 10, CostMicros: 1000}})
		text := cyclic
		if req.Attempt == 2 {
			text = valid
		}
		return &muster.ExecResult{}, os.WriteFile(req.PlanOut, []byte(text), 0o644)
	}}
	opts, j := options(t, exec)
	opts.Confine = &muster.Confinement{Launcher: "/bin/muster", Writable: []string{"/shared"}}
	res, err := planner.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid() || res.Tries != 2 || string(res.Text) != valid {
		t.Fatalf("valid %v after %d tries: %q", res.Valid(), res.Tries, res.Text)
	}
	if res.Usage.CostMicros != 2000 || res.Usage.InputTokens != 200 {
		t.Errorf("usage %+v, want two tries' worth", res.Usage)
	}
	if len(prompts) != 2 {
		t.Fatalf("%d prompts", len(prompts))
	}
	for _, want := range []string{"Add a, b and c.", "MUSTER_PLAN_OUT", "## [ ] ID: Title", "Owns", "README.md", "go test ./...", "A tiny project.", "- c (command, 2 clones): coder"} {
		if !strings.Contains(prompts[0], want) {
			t.Errorf("first prompt lacks %q", want)
		}
	}
	if strings.Contains(prompts[0], "did not validate") {
		t.Error("first prompt speaks of a previous plan")
	}
	if !strings.Contains(prompts[1], "plan.md:") || !strings.Contains(prompts[1], "cycle") || !strings.Contains(prompts[1], "<previous-plan>") {
		t.Errorf("retry prompt lacks the problems or the previous plan:\n%s", prompts[1])
	}
	// The journal folds into a finished session with the planner's usage by role.
	evs := j.Snapshot()
	st, err := engine.Replay(evs)
	if err != nil {
		t.Fatal(err)
	}
	if st.RunState != muster.RunSucceeded || st.Tasks[planner.TaskID].State != muster.StateSucceeded || st.Tasks[planner.TaskID].Attempts != 2 {
		t.Errorf("session %s, task %+v", st.RunState, st.Tasks[planner.TaskID])
	}
	if evs[0].Kind != muster.RunKindPlan {
		t.Errorf("RunStarted kind %q", evs[0].Kind)
	}
	roles := 0
	for _, e := range evs {
		if e.Type == muster.EvTokensUsed && e.Role == muster.RolePlanner {
			roles++
		}
	}
	if roles != 2 {
		t.Errorf("%d TokensUsed with role planner, want 2", roles)
	}
}

// A planner that never gives a valid plan: no plan, the last problems.
func TestRunGivesUp(t *testing.T) {
	n := 0
	exec := &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		n++
		return &muster.ExecResult{}, os.WriteFile(req.PlanOut, []byte(cyclic), 0o644)
	}}
	opts, j := options(t, exec)
	opts.Tries = 2
	res, err := planner.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid() || n != 2 || res.Tries != 2 || len(res.Problems.Errors()) == 0 {
		t.Fatalf("valid %v, %d calls, %d tries, problems %v", res.Valid(), n, res.Tries, res.Problems)
	}
	st, err := engine.Replay(j.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if st.RunState != muster.RunFailed || st.Tasks[planner.TaskID].State != muster.StateFailed {
		t.Errorf("session %s, task %s", st.RunState, st.Tasks[planner.TaskID].State)
	}
}

// A read-only agent answers with its plan; a symlink in MUSTER_PLAN_OUT
// is refused, never followed.
func TestRunFinalMessageAndSymlink(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(secret, []byte(valid), 0o644); err != nil {
		t.Fatal(err)
	}
	exec := &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Attempt == 1 {
			return &muster.ExecResult{}, os.Symlink(secret, req.PlanOut)
		}
		return &muster.ExecResult{Final: "Here is the plan.\n\n```markdown\n" + valid + "```\n\nDone."}, nil
	}}
	opts, _ := options(t, exec)
	res, err := planner.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid() || res.Tries != 2 || string(res.Text) != valid {
		t.Fatalf("valid %v after %d tries: %q", res.Valid(), res.Tries, res.Text)
	}
}

// A planner that cannot start ends the session with an error at once.
func TestRunAgentCannotStart(t *testing.T) {
	n := 0
	exec := &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		n++
		return nil, &muster.AgentError{Class: muster.FailStart, Message: "no such binary"}
	}}
	opts, j := options(t, exec)
	_, err := planner.Run(context.Background(), opts)
	if err == nil || n != 1 || !strings.Contains(err.Error(), "no such binary") {
		t.Fatalf("err %v after %d calls", err, n)
	}
	if _, err := engine.Replay(j.Snapshot()); err != nil {
		t.Fatal(err)
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	exec := &mock.Executor{ExecuteFn: func(c context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		cancel(muster.ErrInterrupted)
		return nil, context.Cause(ctx)
	}}
	opts, j := options(t, exec)
	_, err := planner.Run(ctx, opts)
	if !errors.Is(err, muster.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	st, err := engine.Replay(j.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if st.RunState != muster.RunInterrupted {
		t.Errorf("state %s", st.RunState)
	}
}

func TestExtract(t *testing.T) {
	for _, c := range []struct{ name, msg, want string }{
		{"bare", "Sure.\n# Plan: x\n\n## [ ] a: A\nOwns: a\n", "# Plan: x\n\n## [ ] a: A\nOwns: a\n"},
		{"fenced", "Sure.\n```md\n# Plan: x\n## [ ] a: A\n```\nmore", "# Plan: x\n## [ ] a: A\n"},
		{"first fence without tasks skipped", "```sh\nls\n```\n~~~\n## [ ] a: A\n~~~\n", "## [ ] a: A\n"},
		{"longer fence holds inner fences", "````markdown\n## [ ] a: A\n\n```sh\nls\n```\n````\n", "## [ ] a: A\n\n```sh\nls\n```\n"},
		{"task without title", "text\n## [x] a: A\n", "## [x] a: A\n"},
		{"none", "I could not do it.", ""},
	} {
		if got := string(planner.Extract(c.msg)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	p, probs := check("plan.md", []byte(valid))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "c", Clones: 3, Roles: []muster.Role{muster.RoleCoder}}}}
	cfg.Run.MaxParallel = 1
	s := planner.Summarize(p, cfg)
	if s.Tasks != 3 || len(s.CriticalPath) != 2 || s.CriticalPath[1] != "c" || s.Width != 2 || s.Clones != 1 || s.AtOnce != 1 || s.Budgeted != 1 || s.BudgetUSD != 1 {
		t.Errorf("%+v", s)
	}
	lines := strings.Join(s.Lines(), "\n")
	if !strings.Contains(lines, "for the 1 of 3 tasks with a Budget") {
		t.Errorf("lines:\n%s", lines)
	}
}

// A chatty planner: its tool and message records are capped per try;
// its usage is all kept.
func TestRunCapsRecords(t *testing.T) {
	exec := &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		for i := 0; i < 2000; i++ {
			emit(muster.Record{Type: muster.RecMessage, Text: "blah"})
			emit(muster.Record{Type: muster.RecTool, Tool: "Read", Args: "x"})
			emit(muster.Record{Type: muster.RecUsage, Model: "m", Usage: muster.Usage{InputTokens: 1}})
		}
		return &muster.ExecResult{}, os.WriteFile(req.PlanOut, []byte(valid), 0o644)
	}}
	opts, j := options(t, exec)
	res, err := planner.Run(context.Background(), opts)
	if err != nil || !res.Valid() {
		t.Fatalf("%v %+v", err, res)
	}
	n := map[muster.EventType]int{}
	var last string
	for _, e := range j.Snapshot() {
		n[e.Type]++
		if e.Type == muster.EvMessage {
			last = e.Message
		}
	}
	if n[muster.EvMessage] != 501 || n[muster.EvToolUse] != 500 || n[muster.EvTokensUsed] != 2000 || res.Usage.InputTokens != 2000 ||
		!strings.Contains(last, "3000 more tool and message records") {
		t.Errorf("events %v, usage %+v, last message %q", n, res.Usage, last)
	}
}

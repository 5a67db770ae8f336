package driver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/agent/command"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/gate"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/mock"
)

// e2e is a run on a real repository with command executors running
// shell scripts and real gates.
type e2e struct {
	repo string
	ws   *git.Workspace
	j    *mock.Journal
	opts driver.Options
}

func sh(t testing.TB, dir string, args ...string) string {
	t.Helper()
	c := exec.Command(args[0], args[1:]...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newE2E makes a repository holding files, and a run of p whose crew is
// the coder script (two clones) and, when given, the reviewer script.
func newE2E(t testing.TB, p *muster.Plan, files map[string]string, coder, reviewer string, gates ...muster.GateSpec) *e2e {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	repo := t.TempDir()
	sh(t, repo, "git", "init", "-q", "-b", "main")
	sh(t, repo, "git", "config", "user.name", "Test")
	sh(t, repo, "git", "config", "user.email", "test@example.com")
	files["README.md"] = "test\n"
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(repo, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh(t, repo, "git", "add", "-A")
	sh(t, repo, "git", "commit", "-q", "-m", "initial")
	scripts := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(scripts, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	ws, err := git.Open(ctx, git.Options{Repo: repo, RunID: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close(ctx) })
	cfg := &muster.Config{Gates: gates, Run: muster.RunConfig{OnFailure: muster.OnFailureContinue}}
	execs := map[string]muster.Executor{engine.CodeExecutor: gate.CodeExecutor{}}
	add := func(name, script string, roles ...muster.Role) {
		spec := &muster.ExecutorSpec{Name: name, Kind: muster.ExecCommand, Clones: 2, Roles: roles,
			Command: []string{"sh", write(name+".sh", script)}, Env: map[string]string{"SCRIPTS": scripts}}
		if len(roles) > 0 {
			spec.Clones = 1
		}
		ex, err := command.New(spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Executors = append(cfg.Executors, spec)
		execs[name] = ex
	}
	add("coder", coder)
	if reviewer != "" {
		add("rev", reviewer, muster.RoleReviewer)
	}
	e := &e2e{repo: repo, ws: ws, j: &mock.Journal{}}
	runDir := t.TempDir()
	e.opts = driver.Options{RunID: "e2e", PlanPath: "plan.md", Plan: p, Config: cfg, Base: ws.Base(), Branch: ws.Branch(),
		Journal: e.j, Workspace: ws, Executors: execs, Gates: gate.Runner{}, ScratchDir: filepath.Join(runDir, "scratch")}
	return e
}

func (e *e2e) run(t testing.TB) *engine.State {
	t.Helper()
	st, err := driver.Run(context.Background(), e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (e *e2e) events(typ muster.EventType) []muster.Event {
	var out []muster.Event
	for _, ev := range e.j.Snapshot() {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func task(id string, owns ...string) *muster.Task {
	return &muster.Task{ID: muster.TaskID(id), Title: "task " + id, Prompt: "do " + id, Owns: owns}
}

// Two tasks that each pass the plan-wide gate alone but break it together:
// the second to land is caught on the merged tree, fixed there, and the
// run branch never holds a tree that fails the gate.
func TestE2EIntegrationGateCatchesBrokenCombination(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("a", "a.txt", "ok.txt"), task("b", "b.txt", "ok.txt")}}
	// Both coders start on the same base (a barrier), then write their file;
	// asked again (a fix round) they add ok.txt.
	coder := `set -e
touch "$SCRIPTS/started-$MUSTER_TASK_ID"
i=0; while [ ! -f "$SCRIPTS/started-a" ] || [ ! -f "$SCRIPTS/started-b" ]; do i=$((i+1)); [ $i -lt 500 ] || break; sleep 0.01; done
echo "$MUSTER_TASK_ID" > "$MUSTER_TASK_ID.txt"
if [ "$MUSTER_ROUND" -gt 0 ]; then echo fixed > ok.txt; fi
echo "done $MUSTER_TASK_ID"
`
	const together = "test ! -f a.txt || test ! -f b.txt || test -f ok.txt"
	e := newE2E(t, p, map[string]string{}, coder, "", muster.GateSpec{Name: "together", Command: together})
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: a %q b %q", st.RunState, st.Tasks["a"].Reason, st.Tasks["b"].Reason)
	}
	var caught []muster.Event
	for _, g := range e.events(muster.EvGateRan) {
		if g.Phase == "integration" && !*g.Passed {
			caught = append(caught, g)
		}
	}
	// A red top is gated once more (a flaky gate would pass the second
	// time) before it is blamed.
	if len(caught) != 2 || caught[0].Baseline != "pass" || caught[1].Commit != caught[0].Commit {
		t.Fatalf("integration gate failures %+v", caught)
	}
	if fr := e.events(muster.EvFixRound); len(fr) != 1 || fr[0].Task != caught[0].Task || !strings.Contains(fr[0].Reason, "failed on integration") {
		t.Fatalf("fix rounds %+v", fr)
	}
	// Every tree the run branch held passes the gate.
	tree := t.TempDir()
	for _, c := range strings.Fields(sh(t, e.repo, "git", "rev-list", "--first-parent", e.ws.Branch())) {
		sh(t, e.repo, "sh", "-c", "rm -rf "+tree+"/* && git archive "+c+" | tar -x -C "+tree)
		if err := exec.Command("sh", "-c", "cd "+tree+" && "+together).Run(); err != nil {
			t.Fatalf("run branch held %s, which fails the gate", c)
		}
	}
	if got := sh(t, e.repo, "git", "show", e.ws.Branch()+":ok.txt"); got != "fixed" {
		t.Fatalf("ok.txt %q", got)
	}
}

// A gate failure fixed in round 2, a critical finding fixed then
// approved, a pre-existing failure not charged, and notes from task a in
// task b's prompt, with command coders and reviewers.
func TestE2EGateReviewNotes(t *testing.T) {
	a := task("a", "answer.txt")
	a.Gates = []string{"grep -qx 42 answer.txt"}
	b := task("b", "b-prompt.md")
	b.After = []muster.TaskID{"a"}
	b.Review = "none"
	p := &muster.Plan{Tasks: []*muster.Task{a, b}}
	coder := `set -e
case "$MUSTER_TASK_ID.$MUSTER_ROUND" in
a.0) echo 41 > answer.txt ;;
a.1) echo 42 > answer.txt ;;
a.2) echo 42 > answer.txt; echo "# checked" >> answer.txt ;;
b.*) cp "$MUSTER_PROMPT_FILE" b-prompt.md ;;
esac
echo "round $MUSTER_ROUND done"
echo "## Findings"
echo "- answer.txt must hold the answer alone on line 1"
`
	reviewer := `set -e
if grep -q checked answer.txt; then echo '{"type":"findings","findings":[]}'; exit 0; fi
echo '{"type":"findings","findings":[{"severity":"critical","title":"no comment","path":"answer.txt"},{"severity":"minor","title":"style"}]}'
`
	e := newE2E(t, p, map[string]string{}, coder, reviewer, muster.GateSpec{Name: "legacy", Command: "test -f missing.txt"})
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: a %q b %q", st.RunState, st.Tasks["a"].Reason, st.Tasks["b"].Reason)
	}
	var reasons []string
	for _, f := range e.events(muster.EvFixRound) {
		reasons = append(reasons, f.Reason)
	}
	if len(reasons) != 2 || !strings.Contains(reasons[0], "gate a/gate1") || !strings.Contains(reasons[1], "critical: no comment") {
		t.Fatalf("fix rounds %q", reasons)
	}
	for _, g := range e.events(muster.EvGateRan) {
		if g.Gate == "legacy" && (g.Baseline != "fail" || !strings.HasPrefix(g.Reason, "pre-existing")) {
			t.Fatalf("legacy gate charged: %+v", g)
		}
	}
	prompt := sh(t, e.repo, "git", "show", e.ws.Branch()+":b-prompt.md")
	for _, want := range []string{"answer.txt must hold the answer alone", "changed: answer.txt", "Notes from earlier tasks"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("b's prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// A check/repair loop that resolves on its second attempt, and
// one that exhausts its attempts: its dependent is skipped.
func TestE2ECheckRepairLoops(t *testing.T) {
	fix := task("fix", "state.txt")
	fix.Loop = &muster.LoopSpec{Check: "grep -qx 1 state.txt", Max: 3}
	never := task("never", "never.txt")
	never.Loop = &muster.LoopSpec{Check: "test -f impossible.txt", Max: 2}
	after := task("after")
	after.After = []muster.TaskID{"never"}
	p := &muster.Plan{Tasks: []*muster.Task{fix, never, after}}
	coder := `set -e
case "$MUSTER_TASK_ID" in
fix) echo "$MUSTER_ROUND" > state.txt ;;
never) echo "$MUSTER_ROUND" > never.txt ;;
esac
`
	e := newE2E(t, p, map[string]string{"state.txt": "0\n"}, coder, "")
	st := e.run(t)
	if f := st.Tasks["fix"]; f.State != muster.StateSucceeded {
		t.Fatalf("fix %s %q", f.State, f.Reason)
	}
	if n := st.Tasks["never"]; n.State != muster.StateFailed || !strings.HasPrefix(n.Reason, "loop exhausted") {
		t.Fatalf("never %s %q", n.State, n.Reason)
	}
	if a := st.Tasks["after"]; a.State != muster.StateSkipped {
		t.Fatalf("after %s", a.State)
	}
	verdicts := map[muster.TaskID]muster.Event{}
	for _, ev := range e.events(muster.EvLoopEnded) {
		verdicts[ev.Task] = ev
	}
	if v := verdicts["fix"]; v.State != "resolved" || v.Round != 2 {
		t.Fatalf("fix verdict %+v", v)
	}
	if v := verdicts["never"]; v.State != "exhausted" || v.Round != 2 {
		t.Fatalf("never verdict %+v", v)
	}
	if got := sh(t, e.repo, "git", "show", e.ws.Branch()+":state.txt"); got != "1" {
		t.Fatalf("state.txt %q", got)
	}
}

// Files a gate writes (a __pycache__, a conftest's output) are never the
// agent's: the fix round after a failing gate is not a boundary
// violation, and the task's commit holds only what the agent wrote.
func TestE2EGateOutputIsNotTheAgents(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("a", "src.txt")}}
	coder := `if [ "$MUSTER_ROUND" -gt 0 ]; then echo fine > src.txt; else echo bad > src.txt; fi
echo done`
	g := muster.GateSpec{Name: "test", Command: "mkdir -p __pycache__ && date > __pycache__/m.pyc && echo log > gate-out.txt && ! grep -q bad src.txt"}
	e := newE2E(t, p, map[string]string{"src.txt": "old\n"}, coder, "", g)
	st := e.run(t)
	if a := st.Tasks["a"]; a.State != muster.StateSucceeded {
		t.Fatalf("%s %q; violations %+v", a.State, a.Reason, e.events(muster.EvViolation))
	}
	if v := append(e.events(muster.EvViolation), e.events(muster.EvWarning)...); len(v) != 0 {
		t.Fatalf("violations %+v", v)
	}
	if files := sh(t, e.repo, "git", "diff", "--name-only", e.ws.Base(), e.ws.Branch()); files != "src.txt" {
		t.Fatalf("the run branch's change: %q", files)
	}
}

// A gate that rewrites the agent's change (a formatter that fixes
// instead of checking) fails the round as "gate G changed P": what it
// wrote is not committed unless a later round leaves the gate nothing
// to change. Here the coder writes the same unformatted line every
// round, so every round fails and nothing is committed.
func TestE2EGateThatRewritesTheChangeFailsTheRound(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("a", "src.txt")}}
	coder := `echo 'x  =  1' > src.txt; echo done`
	g := muster.GateSpec{Name: "fmt", Command: "sed -i 's/  */ /g' src.txt"}
	e := newE2E(t, p, map[string]string{"src.txt": "old\n"}, coder, "", g)
	st := e.run(t)
	a := st.Tasks["a"]
	if a.State == muster.StateSucceeded {
		t.Fatalf("succeeded although the gate rewrote src.txt")
	}
	if !strings.Contains(a.Reason, "gate fmt changed src.txt") {
		t.Fatalf("reason %q", a.Reason)
	}
	if files := sh(t, e.repo, "git", "diff", "--name-only", e.ws.Base(), e.ws.Branch()); files != "" {
		t.Fatalf("the run branch holds %q", files)
	}
}

// The coder that keeps what the gate wrote (its next round changes
// nothing the gate rewrites) gets its change committed.
func TestE2EGateRewriteKeptNextRoundCommits(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("a", "src.txt")}}
	coder := `if [ "$MUSTER_ROUND" -eq 0 ]; then echo 'x  =  1' > src.txt; fi; echo done`
	g := muster.GateSpec{Name: "fmt", Command: "sed -i 's/  */ /g' src.txt"}
	e := newE2E(t, p, map[string]string{"src.txt": "old\n"}, coder, "", g)
	st := e.run(t)
	if a := st.Tasks["a"]; a.State != muster.StateSucceeded {
		t.Fatalf("%s %q", a.State, a.Reason)
	}
	if got := sh(t, e.repo, "git", "show", e.ws.Branch()+":src.txt"); got != "x = 1" {
		t.Fatalf("src.txt %q", got)
	}
}

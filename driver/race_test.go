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

// raceCoder writes out.txt by executor: a three lines of "good", b one,
// c "bad" (its gate fails every round).
const raceCoder = `set -e
case "$MUSTER_EXECUTOR" in
a) printf 'good\nmore\nmore\n' > out.txt ;;
b) echo good > out.txt ;;
c) echo bad > out.txt ;;
esac
echo "done by $MUSTER_EXECUTOR"
`

// newRace makes a repository and a run of one raced task (Owns out.txt,
// Gate: grep -qx good out.txt) whose crew is the coders a, b and c (one
// clone each) running coder, and the reviewer "judge" running judge
// (reviews as the judge of the race).
func newRace(t *testing.T, tk *muster.Task, coder, judge string) *e2e {
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
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, repo, "git", "add", "-A")
	sh(t, repo, "git", "commit", "-q", "-m", "initial")
	scripts := t.TempDir()
	ctx := context.Background()
	ws, err := git.Open(ctx, git.Options{Repo: repo, RunID: "race"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close(ctx) })
	cfg := &muster.Config{Run: muster.RunConfig{OnFailure: muster.OnFailureContinue, MaxRounds: 1}}
	execs := map[string]muster.Executor{engine.CodeExecutor: gate.CodeExecutor{}}
	add := func(name, script string, role muster.Role) {
		p := filepath.Join(scripts, name+".sh")
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		spec := &muster.ExecutorSpec{Name: name, Kind: muster.ExecCommand, Clones: 1, Roles: []muster.Role{role},
			Command: []string{"sh", p}, Env: map[string]string{"SCRIPTS": scripts}}
		ex, err := command.New(spec)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Executors = append(cfg.Executors, spec)
		execs[name] = ex
	}
	for _, n := range []string{"a", "b", "c"} {
		add(n, coder, muster.RoleCoder)
	}
	if judge != "" {
		add("judge", judge, muster.RoleReviewer)
	}
	tk.Owns = []string{"out.txt"}
	tk.Gates = []string{"grep -qx good out.txt"}
	e := &e2e{repo: repo, ws: ws, j: &mock.Journal{}}
	e.opts = driver.Options{RunID: "race", PlanPath: "plan.md", Plan: &muster.Plan{Tasks: []*muster.Task{tk}}, Config: cfg,
		Base: ws.Base(), Branch: ws.Branch(), Journal: e.j, Workspace: ws, Executors: execs, Gates: gate.Runner{},
		ScratchDir: filepath.Join(t.TempDir(), "scratch")}
	return e
}

// judgeScript approves every review and, shown the race's candidates,
// prints verdict (a JSON line, or nothing).
func judgeScript(verdict string) string {
	return `set -e
if grep -q '^=== candidate' "$MUSTER_DIFF_FILE"; then
  echo "judging"
  ` + verdict + `
  exit 0
fi
echo '{"type":"findings","findings":[]}'
`
}

// landed is the run branch's commits above the base and out.txt at its tip.
func (e *e2e) landed(t *testing.T) ([]string, string) {
	t.Helper()
	commits := strings.Fields(sh(t, e.repo, "git", "rev-list", e.ws.Base()+".."+e.ws.Branch()))
	return commits, sh(t, e.repo, "git", "show", e.ws.Branch()+":out.txt")
}

func raceWon(t *testing.T, e *e2e) muster.Event {
	t.Helper()
	won := e.events(muster.EvRaceWon)
	if len(won) != 1 {
		t.Fatalf("RaceWon events: %+v", won)
	}
	return won[0]
}

// A 3-way race: c fails its gate, a and b pass, and the judge (an
// executor none of them is) names a: a's change lands alone, in one
// commit; b's stays as a race ref, off the run branch.
func TestRaceJudgePicksTheWinner(t *testing.T) {
	e := newRace(t, &muster.Task{ID: "r", Title: "race", Prompt: "write good", Race: 3}, raceCoder,
		judgeScript(`echo '{"type":"verdict","winner":"a#1","reason":"a says more"}'`))
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: %q", st.RunState, st.Tasks["r"].Reason)
	}
	rs := e.events(muster.EvRaceStarted)
	if len(rs) != 1 || len(rs[0].Race) != 3 {
		t.Fatalf("RaceStarted %+v", rs)
	}
	passed, failed := map[string]muster.Event{}, map[string]muster.Event{}
	for _, c := range e.events(muster.EvCandidateFinished) {
		if *c.Passed {
			passed[c.Executor] = c
		} else {
			failed[c.Executor] = c
		}
	}
	if len(passed) != 2 || passed["a"].Commit == "" || passed["b"].Commit == "" || len(failed) != 1 || !strings.Contains(failed["c"].Reason, "gate") {
		t.Fatalf("candidates: passed %+v failed %+v", passed, failed)
	}
	if s := passed["a"].Stat; s == nil || s.Added != 3 || s.Files != 1 {
		t.Fatalf("a's stat %+v", s)
	}
	w := raceWon(t, e)
	if w.Executor != "a" || w.State != muster.RaceJudge || w.Judge != "judge#1" || w.Reason != "a says more" {
		t.Fatalf("RaceWon %+v", w)
	}
	commits, out := e.landed(t)
	if len(commits) != 1 || out != "good\nmore\nmore" {
		t.Fatalf("run branch: %d commits, out.txt %q", len(commits), out)
	}
	// The loser is kept as a ref, never on the run branch.
	ref := git.RaceRef("race", "r", passed["b"].Attempt)
	if got := sh(t, e.repo, "git", "rev-parse", ref); got != passed["b"].Commit {
		t.Fatalf("%s = %s, want %s", ref, got, passed["b"].Commit)
	}
	if err := exec.Command("git", "-C", e.repo, "merge-base", "--is-ancestor", passed["b"].Commit, e.ws.Branch()).Run(); err == nil {
		t.Fatal("the loser's commit is on the run branch")
	}
	r := st.Tasks["r"]
	if r.Attempts != 3 || r.Race == nil || r.Race.Winner < 0 || r.Race.Candidates[r.Race.Winner].Executor != "a" {
		t.Fatalf("task state: attempts %d race %+v", r.Attempts, r.Race)
	}
	if n, err := git.DropRaceRefs(context.Background(), e.repo); err != nil || n != 2 {
		t.Fatalf("DropRaceRefs = %d, %v", n, err)
	}
}

// A judge that says nothing (or names no candidate): the smallest
// passing change wins (b's one line against a's three).
func TestRaceJudgeSilenceTakesTheSmallest(t *testing.T) {
	for name, verdict := range map[string]string{
		"silent":  `echo "I like them both"`,
		"unknown": `echo '{"type":"verdict","winner":"c#1","reason":"c"}'`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newRace(t, &muster.Task{ID: "r", Title: "race", Prompt: "write good", Race: 3}, raceCoder, judgeScript(verdict))
			if st := e.run(t); st.RunState != muster.RunSucceeded {
				t.Fatalf("run %s", st.RunState)
			}
			w := raceWon(t, e)
			if w.Executor != "b" || w.State != muster.RaceSmallest || !strings.Contains(w.Reason, "smallest change") {
				t.Fatalf("RaceWon %+v", w)
			}
			if commits, out := e.landed(t); len(commits) != 1 || out != "good" {
				t.Fatalf("run branch: %d commits, out.txt %q", len(commits), out)
			}
		})
	}
}

// Race: first: b passes at once and wins; a, still working, is
// cancelled; one commit lands.
func TestRaceFirstCancelsTheOthers(t *testing.T) {
	coder := `set -e
case "$MUSTER_EXECUTOR" in
a) touch "$SCRIPTS/a-started"; sleep 60; echo good > out.txt ;;
b) i=0; while [ ! -f "$SCRIPTS/a-started" ] && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.01; done; echo good > out.txt ;;
c) echo bad > out.txt ;;
esac
`
	e := newRace(t, &muster.Task{ID: "r", Title: "race", Prompt: "write good", RaceFirst: true, Candidates: []string{"a", "b"}}, coder, "")
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		for _, ev := range e.j.Snapshot() {
			t.Logf("%s %s %s#%d a%d %q %q %v", ev.Type, ev.Task, ev.Executor, ev.Clone, ev.Attempt, ev.Reason, ev.Message, ev.Passed)
		}
		t.Fatalf("run %s: %q", st.RunState, st.Tasks["r"].Reason)
	}
	if rs := e.events(muster.EvRaceStarted); len(rs) != 1 || len(rs[0].Race) != 2 {
		t.Fatalf("RaceStarted %+v", rs)
	}
	w := raceWon(t, e)
	if w.Executor != "b" || w.State != muster.RaceFirst {
		t.Fatalf("RaceWon %+v", w)
	}
	var lost *muster.Event
	for _, c := range e.events(muster.EvCandidateFinished) {
		if c.Executor == "a" {
			lost = &c
		}
	}
	if lost == nil || *lost.Passed || !strings.Contains(lost.Reason, "won by another") {
		t.Fatalf("a's end %+v", lost)
	}
	if commits, out := e.landed(t); len(commits) != 1 || out != "good" {
		t.Fatalf("run branch: %d commits, out.txt %q", len(commits), out)
	}
}

// A race the budget cannot cover runs fewer candidates, says so, and
// charges every attempt.
func TestRaceOverBudgetRunsFewer(t *testing.T) {
	coder := raceCoder + `echo '{"type":"usage","input_tokens":10,"output_tokens":5,"cost_usd":0.5}'` + "\n"
	tk := &muster.Task{ID: "r", Title: "race", Prompt: "write good", Race: 3, Budget: muster.Budget{USDMicros: 1_000_000}}
	e := newRace(t, tk, coder, "")
	e.opts.Config.Run.BudgetUSDMicros = 2_500_000
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: %q", st.RunState, st.Tasks["r"].Reason)
	}
	rs := e.events(muster.EvRaceStarted)
	if len(rs) != 1 || len(rs[0].Race) != 2 || !strings.Contains(rs[0].Reason, "runs 2 of 3 candidates") {
		t.Fatalf("RaceStarted %+v", rs)
	}
	warned := false
	for _, w := range e.events(muster.EvWarning) {
		warned = warned || strings.Contains(w.Message, "runs 2 of 3 candidates")
	}
	if !warned {
		t.Fatal("no warning that the race runs fewer candidates")
	}
	if st.Usage.CostMicros != 1_000_000 {
		t.Fatalf("charged %d micro-dollars, want both attempts' 1000000", st.Usage.CostMicros)
	}
}

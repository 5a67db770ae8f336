package crash

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/journal"
)

// budgetAgent reports $0.001 first, then works (task "big" for long).
const budgetAgent = `#!/bin/sh
echo '{"type":"usage","model":"script","input_tokens":100,"cost_usd":0.001}'
id="$MUSTER_TASK_ID"
[ "$id" = big ] && sleep 30
mkdir -p "out/$id" && echo "task $id" > "out/$id/result.txt"
`

func budgetSetup(t *testing.T, plan string) (repo, planPath, cfg string) {
	side := t.TempDir()
	agent := writeFile(t, filepath.Join(side, "agent.sh"), budgetAgent)
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = writeFile(t, filepath.Join(side, "muster.toml"),
		fmt.Sprintf("[run]\nmax_parallel = 1\n\n[executors.sh]\nkind = \"command\"\nclones = 1\ncommand = [%q]\n", agent))
	planPath = writeFile(t, filepath.Join(side, "plan.md"), plan)
	return newRepo(t, map[string]string{"README.md": "budget\n"}), planPath, cfg
}

func events(t *testing.T, repo, run string) []muster.Event {
	t.Helper()
	evs, err := journal.ReadFile(filepath.Join(repo, ".git", "muster", "runs", run, journal.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestBudgetStopsTheRunAndResumeWithARaisedBudgetFinishesIt(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Plan: budget\n\n")
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		fmt.Fprintf(&b, "## [ ] %s: Task %s\nOwns: out/%s/\n\nWrite it.\n\n", id, id, id)
	}
	repo, plan, cfg := budgetSetup(t, b.String())
	r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--run-id", "b", "--budget-usd", "0.0035", "--plain")
	if r.code != 1 {
		t.Fatalf("budget-stopped run: exit %d, want 1\n%s", r.code, r.stderr)
	}
	succeeded, cancelled, warned := 0, 0, 0
	for _, e := range events(t, repo, "b") {
		switch {
		case e.Type == muster.EvTaskSucceeded:
			succeeded++
		case e.Type == muster.EvTaskCancelled && strings.HasPrefix(e.Reason, "budget: "):
			cancelled++
		case e.Type == muster.EvWarning && e.Reason == "budget-80":
			warned++
		}
	}
	// One task at a time, each $0.001: three fit in $0.0035.
	if succeeded != 3 || cancelled != 3 || warned != 1 {
		t.Fatalf("%d succeeded, %d cancelled for the budget, %d warnings; want 3, 3, 1\n%s", succeeded, cancelled, warned, r.stderr)
	}
	r = runMuster(t, repo, nil, 0, "resume", "b", "--budget-usd", "0.01", "--plain")
	if r.code != 0 {
		t.Fatalf("resume with a raised budget: exit %d\n%s", r.code, r.stderr)
	}
	var spent int64
	for _, e := range events(t, repo, "b") {
		spent += e.CostMicros
	}
	if spent != 6000 {
		t.Errorf("spent %d micro-dollars over both processes, want 6000 (each task once)", spent)
	}
}

func TestTaskBudgetCancelsTheAttemptLive(t *testing.T) {
	repo, plan, cfg := budgetSetup(t, "# Plan: big\n\n## [ ] big: Costly\nOwns: out/big/\nBudget: $0.0005\n\nWork long.\n")
	r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--run-id", "big", "--plain")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	found := false
	for _, e := range events(t, repo, "big") {
		if e.Type == muster.EvTaskCancelled && e.Task == "big" && strings.HasPrefix(e.Reason, "budget: task big spent $0.0010 of its $0.0005") {
			found = true
		}
	}
	if !found {
		t.Errorf("no TaskCancelled for the task budget\n%s", r.stderr)
	}
}

package crash

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// delegateAgent: the planner writes three tasks inside its own Owns (or,
// as "rogue", one outside them); the children write their directory.
const delegateAgent = `#!/bin/sh
id="$MUSTER_TASK_ID"
case "$id" in
plan|rogue)
  [ -n "$MUSTER_PLAN_OUT" ] || { echo "no MUSTER_PLAN_OUT" >&2; exit 1; }
  for c in 1 2 3; do
    owns="out/$id/c$c/"
    [ "$id" = rogue ] && owns="elsewhere/c$c/"
    printf '## [ ] %s-c%s: Child %s\nOwns: %s\n\nWrite it.\n\n' "$id" "$c" "$c" "$owns" >> "$MUSTER_PLAN_OUT"
  done
  mkdir -p "out/$id" && echo planned > "out/$id/PLAN"
  ;;
*)
  sleep 0.2
  dir="out/${id%%-*}/${id#*-}"
  mkdir -p "$dir" && echo "task $id" > "$dir/result.txt"
  ;;
esac
`

func delegateSetup(t *testing.T, plan string) (repo, planPath, cfg string) {
	side := t.TempDir()
	agent := writeFile(t, filepath.Join(side, "agent.sh"), delegateAgent)
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = writeFile(t, filepath.Join(side, "muster.toml"),
		fmt.Sprintf("[executors.sh]\nkind = \"command\"\nclones = 3\ncommand = [%q]\n", agent))
	planPath = writeFile(t, filepath.Join(side, "plan.md"), plan)
	return newRepo(t, map[string]string{"README.md": "delegate\n"}), planPath, cfg
}

const delegatingPlan = "# Plan: grow\n\n## [ ] plan: Plan the work\nOwns: out/plan/\nDelegates: yes\n\nSplit it.\n"

func TestDelegatingTaskGrowsThePlanAndTheNewTasksRunInParallel(t *testing.T) {
	repo, plan, cfg := delegateSetup(t, delegatingPlan)
	r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--run-id", "grow", "--plain")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	evs := events(t, repo, "grow")
	started, firstEnd := map[muster.TaskID]int{}, -1
	spliced := 0
	for i, e := range evs {
		switch {
		case e.Type == muster.EvTasksPlanned && e.Task == "plan":
			spliced += len(e.Tasks)
		case e.Type == muster.EvTaskStarted && strings.HasPrefix(string(e.Task), "plan-"):
			started[e.Task] = i
		case e.Type == muster.EvTaskSucceeded && strings.HasPrefix(string(e.Task), "plan-") && firstEnd < 0:
			firstEnd = i
		}
	}
	if spliced != 3 || len(started) != 3 {
		t.Fatalf("%d tasks spliced, %d started; want 3 and 3", spliced, len(started))
	}
	for id, i := range started {
		if i > firstEnd {
			t.Errorf("task %s started after another new task ended: not in parallel", id)
		}
	}
	for c := 1; c <= 3; c++ {
		if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
			t.Fatal(err)
		}
		got := git(t, repo, "show", fmt.Sprintf("muster/grow:out/plan/c%d/result.txt", c))
		if got != fmt.Sprintf("task plan-c%d", c) {
			t.Errorf("child %d wrote %q", c, got)
		}
	}
	if r := runMuster(t, repo, nil, 0, "verify", "grow"); r.code != 0 {
		t.Errorf("verify: exit %d\n%s", r.code, r.stdout)
	}
}

func TestInvalidFragmentFailsTheDelegatorBeforeItsCommitLands(t *testing.T) {
	repo, plan, cfg := delegateSetup(t, "# Plan: rogue\n\n## [ ] rogue: Plan badly\nOwns: out/rogue/\nDelegates: yes\n\nSplit it.\n")
	r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--run-id", "rogue", "--plain")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	reason := ""
	for _, e := range events(t, repo, "rogue") {
		if e.Type == muster.EvTaskFailed && e.Task == "rogue" {
			reason = e.Reason
		}
		if e.Type == muster.EvTasksPlanned && e.Task == "rogue" {
			t.Error("an invalid fragment was spliced in")
		}
	}
	if !strings.Contains(reason, "delegated tasks rejected") || !strings.Contains(reason, "outside the Owns of task rogue") {
		t.Errorf("failure reason %q", reason)
	}
	if log := git(t, repo, "log", "--format=%s", "main..muster/rogue"); log != "" {
		t.Errorf("the rejected delegator's commit landed: %s", log)
	}
}

func TestResumeRebuildsTheGrownPlan(t *testing.T) {
	repo, plan, cfg := delegateSetup(t, delegatingPlan)
	// Killed right after the splice is written, before the delegator's
	// commit lands; then again once a new task has started.
	r := runMuster(t, repo, []string{"MUSTER_CRASH_AT=TasksPlanned:2"}, 0, "run", plan, "--config", cfg, "--run-id", "grow", "--plain")
	if !r.killed {
		t.Fatalf("exit %d, want killed\n%s", r.code, r.stderr)
	}
	r = runMuster(t, repo, []string{"MUSTER_CRASH_AT=TaskStarted:2"}, 0, "resume", "grow", "--plain")
	if !r.killed {
		t.Fatalf("resume: exit %d, want killed\n%s", r.code, r.stderr)
	}
	if r = runMuster(t, repo, nil, 0, "resume", "grow", "--plain"); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	trailers := strings.Fields(git(t, repo, "log", "--format=%(trailers:key=Muster-Task,valueonly)", "main..muster/grow"))
	if strings.Join(trailers, " ") == "" || len(trailers) != 4 {
		t.Errorf("commits %v, want the delegator's and three new tasks'", trailers)
	}
}

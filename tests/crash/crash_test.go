// Package crash holds the crash test: muster is killed with SIGKILL at
// many moments of a run (after chosen journal events, mid-commit,
// mid-integration, and at random times), resumed each time, and must end
// with the same result as a run that was never interrupted.
package crash

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/journal"
)

const tasks = 36

// agentScript is the command executor's agent: it writes out/<task>/
// from its dependencies' outputs (failing if one is missing, so the test
// sees a dependent that started too early), sleeps a little on some
// tasks, and reports usage. It records its pid for the leftover check.
const agentScript = `#!/bin/sh
echo $$ >> "%s"
id="$MUSTER_TASK_ID"
deps=$(sed -n 's/^DEPS: *//p' "$MUSTER_PROMPT_FILE" | head -n 1)
mkdir -p "out/$id"
case "$id" in *[037]) sleep 0.3 ;; esac
{
  echo "task $id"
  for d in $deps; do
    if [ ! -f "out/$d/result.txt" ]; then echo "missing output of $d" >&2; exit 1; fi
    echo "after $d: $(head -n 1 "out/$d/result.txt")"
  done
} > "out/$id/result.txt" || exit 1
echo '{"type":"usage","model":"script","input_tokens":100,"output_tokens":20,"cost_usd":0.001}'
echo "wrote out/$id/result.txt"
`

func taskID(i int) string { return fmt.Sprintf("t%02d", i) }

// writePlan writes a plan of n tasks where task i waits on i-3 and i-7.
func writePlan(t *testing.T, dir string, n int) string {
	var b strings.Builder
	b.WriteString("# Plan: crash\n\nEach task writes its own directory.\n\n")
	for i := 1; i <= n; i++ {
		var deps []string
		for _, k := range []int{3, 7} {
			if i-k >= 1 {
				deps = append(deps, taskID(i-k))
			}
		}
		after := "-"
		if len(deps) > 0 {
			after = strings.Join(deps, ", ")
		}
		fmt.Fprintf(&b, "## [ ] %s: Task %d\nAfter: %s\nOwns: out/%s/\n\nDEPS: %s\n\n", taskID(i), i, after, taskID(i), strings.Join(deps, " "))
	}
	p := filepath.Join(dir, "plan.md")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// setup makes a repository, the agent, a config and a plan outside the
// repository (so that the base trees of two setups are equal).
func setup(t *testing.T, n int) (repo, plan, cfg, pids string) {
	side := t.TempDir()
	pids = filepath.Join(side, "pids")
	agent := filepath.Join(side, "agent.sh")
	if err := os.WriteFile(agent, []byte(fmt.Sprintf(agentScript, pids)), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(side, "muster.toml")
	toml := fmt.Sprintf("[run]\nmax_parallel = 4\n\n[executors.sh]\nkind = \"command\"\nclones = 4\ncommand = [%q]\n", agent)
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	plan = writePlan(t, side, n)
	repo = newRepo(t, map[string]string{"README.md": "crash test\n"})
	return repo, plan, cfg, pids
}

// crashPoints are the MUSTER_CRASH_AT values, one per muster process:
// after journal writes of many event types (the agent running, the
// commit recorded, the branch moved, a success, a release, the resume
// itself, the end of the run), mid-commit and mid-integration.
var crashPoints = []string{
	"TaskStarted:2",
	"AgentStarted:3",
	"commit:2",
	"RunResumed:1",
	"integrate:2",
	"Committed:2",
	"Integrated:2",
	"commit:1",
	"TaskSucceeded:3",
	"ExecutorReleased:3",
	"integrate:1",
	"TokensUsed:2",
	"Phase:4",
	"RunFinished:1",
}

func TestCrashAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds muster and runs it dozens of times")
	}
	seed := time.Now().UnixNano()
	t.Logf("random kill seed %d", seed)
	rng := rand.New(rand.NewSource(seed))

	// The reference: the same plan, never interrupted.
	refRepo, refPlan, refCfg, _ := setup(t, tasks)
	if r := runMuster(t, refRepo, nil, 0, "run", refPlan, "--config", refCfg, "--run-id", "crash", "--plain"); r.code != 0 {
		t.Fatalf("reference run: exit %d\n%s", r.code, r.stderr)
	}
	want := git(t, refRepo, "rev-parse", "muster/crash^{tree}")

	repo, plan, cfg, pids := setup(t, tasks)
	hits := map[string]bool{}
	var log []string
	var last result
	done := false
	for i, point := range crashPoints {
		args := []string{"resume", "crash", "--plain"}
		if i == 0 {
			args = []string{"run", plan, "--config", cfg, "--run-id", "crash", "--plain"}
		}
		last = runMuster(t, repo, []string{"MUSTER_CRASH_AT=" + point}, 0, args...)
		log = append(log, fmt.Sprintf("%s: exit %d killed=%v", point, last.code, last.killed))
		if last.killed {
			hits[point] = true
		} else if last.code != 130 && last.code != 0 {
			t.Fatalf("muster with crash point %s: exit %d\n%s", point, last.code, last.stderr)
		}
		if last.code == 0 {
			done = true
			break
		}
		// Now and then, also kill -9 at a moment of the clock.
		if i%4 == 1 {
			d := time.Duration(100+rng.Intn(500)) * time.Millisecond
			last = runMuster(t, repo, nil, d, "resume", "crash", "--plain")
			log = append(log, fmt.Sprintf("kill -9 after %s: exit %d killed=%v", d, last.code, last.killed))
			if last.killed {
				hits["random "+d.String()] = true
			}
			if last.code == 0 {
				done = true
				break
			}
		}
	}
	for n := 0; !done && n < 5; n++ {
		last = runMuster(t, repo, nil, 0, "resume", "crash", "--plain")
		log = append(log, fmt.Sprintf("resume: exit %d", last.code))
		done = last.code == 0
	}
	t.Logf("processes:\n  %s", strings.Join(log, "\n  "))
	if !done {
		t.Fatalf("the run did not finish after the crashes: exit %d\n%s", last.code, last.stderr)
	}
	if len(hits) < 10 {
		t.Errorf("only %d crash points were reached, want at least 10: %v", len(hits), hits)
	}

	// The same result as the uninterrupted run.
	if got := git(t, repo, "rev-parse", "muster/crash^{tree}"); got != want {
		t.Errorf("final tree %s, want %s (the uninterrupted run's)\n%s", got, want,
			git(t, repo, "diff", "--stat", want, got))
	}
	// Exactly one commit per task on the run branch.
	trailers := git(t, repo, "log", "--format=%(trailers:key=Muster-Task,valueonly)", "main..muster/crash")
	count := map[string]int{}
	for _, l := range strings.Fields(trailers) {
		count[l]++
	}
	for i := 1; i <= tasks; i++ {
		if c := count[taskID(i)]; c != 1 {
			t.Errorf("task %s has %d commits on the run branch, want 1", taskID(i), c)
		}
	}
	if len(count) != tasks {
		t.Errorf("%d tasks have commits, want %d", len(count), tasks)
	}
	// The journal replays cleanly, to a succeeded run.
	jpath := filepath.Join(repo, ".git", "muster", "runs", "crash", journal.FileName)
	events, err := journal.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := engine.Replay(events)
	if err != nil {
		t.Fatalf("journal does not replay: %v", err)
	}
	if st.RunState != muster.RunSucceeded {
		t.Errorf("replayed run state %s, want succeeded", st.RunState)
	}
	for id, ts := range st.Tasks {
		if ts.State != muster.StateSucceeded {
			t.Errorf("task %s: %s (%s)", id, ts.State, ts.Reason)
		}
	}
	// Nothing left behind: worktrees, lock, processes.
	if wts := strings.Count(git(t, repo, "worktree", "list", "--porcelain"), "worktree "); wts != 1 {
		t.Errorf("%d worktrees left, want only the main one:\n%s", wts, git(t, repo, "worktree", "list"))
	}
	if journal.Locked(jpath) {
		t.Error("the run's journal is still locked")
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	var left []int
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		if pid > 0 && alive(pid) {
			left = append(left, pid)
		}
	}
	sort.Ints(left)
	if len(left) > 0 {
		t.Errorf("agent processes left running: %v", left)
	}
	// The run dir holds a verifiable receipt.
	if r := runMuster(t, repo, nil, 0, "verify", "crash"); r.code != 0 {
		t.Errorf("verify after the crashes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

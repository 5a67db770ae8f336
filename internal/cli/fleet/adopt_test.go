package fleet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// adoptScript is the coder of the adoption tests: task a says it
// started (and how much it used so far), waits for the test's word,
// then reports more usage and writes its file. Every start of an agent
// is counted in <task>.runs.
const adoptScript = `#!/bin/sh
m="$MUSTER_MARKS"
t="$MUSTER_TASK_ID"
echo "$MUSTER_FLEET_WORKER" >> "$m/$t.runs"
if [ "$t" = a ]; then
  echo '{"type":"usage","model":"m","input_tokens":100,"output_tokens":10}'
  echo "$MUSTER_FLEET_WORKER" > "$m/a.tmp" && mv "$m/a.tmp" "$m/a.started"
  while [ ! -e "$m/awake" ]; do sleep 0.1; done
  echo '{"type":"usage","model":"m","input_tokens":7,"output_tokens":1}'
fi
echo "$t on $MUSTER_FLEET_WORKER" > "$t.txt"
`

// adoptRun starts a run of resumePlan, waits until task a's agent runs
// on a worker and its first usage is in the journal, and kills the
// orchestrator with kill -9. It returns the worker that holds a.
func adoptRun(t *testing.T, e *env, run string) string {
	t.Helper()
	e.initRepo(map[string]string{"agent.sh": adoptScript})
	plan := e.write("plan.md", resumePlan)
	e.worker("w1", fmt.Sprintf(workerToml, 1))
	e.worker("w2", fmt.Sprintf(workerToml, 1))
	orch := e.start(e.repo, "orch.log", "run", plan, "--nats", e.url, "--plain", "--run-id", run)
	started := filepath.Join(e.dir, "marks", "a.started")
	e.waitFor(60*time.Second, func() bool {
		_, err := os.Stat(started)
		return err == nil && usageOf(e, run, 100) == 1
	}, "a starts and its usage is journaled\n"+e.log("orch.log"))
	b, _ := os.ReadFile(started)
	if err := orch.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = orch.Wait()
	return strings.TrimSpace(string(b))
}

// usageOf counts the journal's TokensUsed events of task a with input.
func usageOf(e *env, run string, input float64) int {
	if _, err := os.Stat(filepath.Join(e.repo, ".git", "muster", "runs", run, "journal.jsonl")); err != nil {
		return 0
	}
	n := 0
	for _, ev := range e.journal(run) {
		if ev["type"] == "TokensUsed" && ev["task"] == "a" && ev["input_tokens"] == input {
			n++
		}
	}
	return n
}

// checkAdopted: task a's agent ran once, on holder; its usage counted
// once each, before and after the crash; the resumed run's WorkerAssigned
// for a names the holder; the worker never dropped it.
func checkAdopted(t *testing.T, e *env, run, holder string) {
	t.Helper()
	e.checkOnce(run, []string{"a", "b", "c", "d"}, 1)
	if b, _ := os.ReadFile(filepath.Join(e.dir, "marks", "a.runs")); strings.TrimSpace(string(b)) != holder {
		t.Errorf("a's agent started on %q, want once on %s", b, holder)
	}
	if n, m := usageOf(e, run, 100), usageOf(e, run, 7); n != 1 || m != 1 {
		t.Errorf("a's usage journaled %d and %d times, want once each", n, m)
	}
	resumed, assigned := false, ""
	for _, ev := range e.journal(run) {
		if ev["type"] == "RunResumed" {
			resumed = true
		}
		if resumed && ev["type"] == "WorkerAssigned" && ev["task"] == "a" {
			assigned, _ = ev["worker"].(string)
		}
	}
	if assigned != holder {
		t.Errorf("after the resume a was assigned to %q, want the adopted %s", assigned, holder)
	}
	if log := e.log(holder + ".log"); strings.Contains(log, "dropped "+run+"/a") {
		t.Errorf("the worker dropped the adopted attempt:\n%s", log)
	}
}

// TestFleetResumeAdoptsRunningAttempt: the orchestrator is killed with
// kill -9 while a worker's agent works on task a; muster resume adopts
// the attempt still running there instead of running it again: the
// agent finishes after the resume, its result lands exactly once, the
// usage it reported before and after the crash counts once, and the
// receipt verifies.
func TestFleetResumeAdoptsRunningAttempt(t *testing.T) {
	e := newEnv(t)
	holder := adoptRun(t, e, "adopt")
	res := e.start(e.repo, "resume.log", "resume", "adopt", "--nats", e.url, "--plain")
	e.waitFor(60*time.Second, func() bool { return resumedIn(e.journal("adopt")) }, "the run resumes\n"+e.log("resume.log"))
	if err := os.WriteFile(filepath.Join(e.dir, "marks", "awake"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, res, 90*time.Second); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, e.log("resume.log"))
	}
	checkAdopted(t, e, "adopt", holder)
}

// TestFleetResumeTakesResultSentWhileDown: the orchestrator is killed
// while a worker's agent works; the agent finishes and the worker sends
// its result while no orchestrator runs; muster resume reads the fleet's
// events again from where its journal left off and takes that result:
// the task lands once, without running again.
func TestFleetResumeTakesResultSentWhileDown(t *testing.T) {
	e := newEnv(t)
	holder := adoptRun(t, e, "down")
	if err := os.WriteFile(filepath.Join(e.dir, "marks", "awake"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitFor(30*time.Second, func() bool { return strings.Contains(e.log(holder+".log"), "finished down/a") },
		"the worker sends a's result while the orchestrator is down\n"+e.log(holder+".log"))
	if code, _, errs := e.run(e.repo, 90*time.Second, "resume", "down", "--nats", e.url, "--plain"); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, errs)
	}
	checkAdopted(t, e, "down", holder)
}

func resumedIn(events []map[string]any) bool {
	for _, ev := range events {
		if ev["type"] == "RunResumed" {
			return true
		}
	}
	return false
}

package fleet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const joinPlan = `# Plan: join

## [ ] a: On the worker of the start
Executor: sh
Owns: a.txt

## [ ] b: On the worker that joins
Executor: y
Owns: b.txt

## [ ] w: After b, on the worker that joins, until the test wakes it
After: b
Executor: y
Owns: w.txt
`

const joinToml = `[fleet]
lease = "2s"

[executors.y]
kind = "command"
clones = 1
command = ["./agent.sh"]
`

// TestWorkerJoinsMidRun: a run starts with worker w1 (executor sh) and a
// plan whose tasks b and w name executor y, which no worker serves yet:
// the run warns, runs a, and waits. Worker w2 (executor y) joins: the
// run journals ExecutorJoined, and b and w run on w2. The orchestrator is
// killed with kill -9 while w runs there; muster resume keeps the crew
// (y), and the run ends with every task once, its receipt verified.
func TestWorkerJoinsMidRun(t *testing.T) {
	e := newEnv(t)
	e.initRepo(map[string]string{"agent.sh": agentScript})
	plan := e.write("plan.md", joinPlan)
	e.worker("w1", fmt.Sprintf(workerToml, 1))
	if code, _, errs := e.run(e.repo, 30*time.Second, "validate", plan, "--nats", e.url); code != 0 || !strings.Contains(errs, `executor "y" is not in the crew`) {
		t.Fatalf("validate --nats: exit %d, want 0 with a warning naming y\n%s", code, errs)
	}
	orch := e.start(e.repo, "orch.log", "run", plan, "--nats", e.url, "--plain", "--run-id", "joined")
	e.waitFor(60*time.Second, func() bool {
		return strings.Contains(e.log("orch.log"), "waits for a fleet worker serving executor y to join")
	}, "the run waits for y\n"+e.log("orch.log"))
	if code, out, errs := e.run(e.repo, 30*time.Second, "status"); code != 0 || !strings.Contains(out, "waits for a fleet worker serving executor y to join") {
		t.Errorf("status while the run waits: exit %d\n%s%s", code, out, errs)
	}
	e.worker("w2", joinToml)
	e.waitFor(60*time.Second, func() bool {
		return strings.Contains(e.log("orch.log"), "w taken by fleet worker w2/y#1")
	}, "w runs on w2\n"+e.log("orch.log"))
	if !strings.Contains(e.log("orch.log"), "executor y joined the crew from fleet worker w2") {
		t.Errorf("no line says y joined:\n%s", e.log("orch.log"))
	}
	if err := orch.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = orch.Wait()
	if err := os.WriteFile(filepath.Join(e.dir, "marks", "awake"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := e.run(e.repo, 120*time.Second, "resume", "joined", "--nats", e.url, "--plain")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, errs)
	}
	e.checkOnce("joined", []string{"a", "b", "w"}, 2)
	for _, tk := range e.runStatus().Tasks {
		want := "w1"
		if tk.ID != "a" {
			want = "w2"
		}
		if tk.Worker == nil || *tk.Worker != want {
			t.Errorf("task %s ran on worker %v, want %s", tk.ID, deref(tk.Worker), want)
		}
		if tk.ID != "a" && (tk.Executor == nil || *tk.Executor != "y#1") {
			t.Errorf("task %s ran on %v, want y#1", tk.ID, deref(tk.Executor))
		}
	}
	joins := 0
	for _, ev := range e.journal("joined") {
		if ev["type"] == "ExecutorJoined" {
			joins++
			if ev["executor"] != "y" || ev["worker"] != "w2" {
				t.Errorf("ExecutorJoined %v", ev)
			}
		}
		if ev["type"] == "RunResumed" {
			// The resumed run's crew has y: the fleet serves it still.
			if !strings.Contains(fmt.Sprint(ev["config"]), "name:y") {
				t.Errorf("the resumed run's config has no y: %v", ev["config"])
			}
		}
	}
	if joins != 1 {
		t.Errorf("%d ExecutorJoined events, want 1 (the resume reads y from the fleet)", joins)
	}
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

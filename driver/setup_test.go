package driver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/mock"
)

// setupE2E is an e2e run whose [setup] step copies lock.txt into deps/
// (its output, kept between tasks) and counts its runs in a file.
func setupE2E(t *testing.T, p *muster.Plan, coder, setupCmd string, gates ...muster.GateSpec) (*e2e, string) {
	e := newE2E(t, p, map[string]string{"lock.txt": "v1\n", ".gitignore": "deps/\n"}, coder, "", gates...)
	count := filepath.Join(t.TempDir(), "count")
	if setupCmd == "" {
		setupCmd = "echo x >> " + count + " && mkdir -p deps && cp lock.txt deps/"
	}
	e.opts.Config.Setup = []muster.SetupStep{{Name: "deps", Command: setupCmd, Inputs: []string{"lock.txt"}, Outputs: []string{"deps/"}}}
	e.reopen(t, "e2e-1")
	return e, count
}

// reopen opens the repository's workspace again for run id (the pool
// persists), keeping what setup makes.
func (e *e2e) reopen(t *testing.T, id string) {
	ctx := context.Background()
	e.ws.Close(ctx)
	ws, err := git.Open(ctx, git.Options{Repo: e.repo, RunID: id, Keep: e.opts.Config.CleanKeep()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close(ctx) })
	e.ws, e.opts.Workspace, e.opts.RunID, e.opts.Base, e.opts.Branch = ws, ws, id, ws.Base(), ws.Branch()
}

func runs(t *testing.T, count string) int {
	b, err := os.ReadFile(count)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "x")
}

// Setup runs once per clone before its first task (the coder's, and the
// baseline clone where the plan-wide gates run on the base first), the
// gates see its output, and a second run in the pooled clones installs
// nothing.
func TestE2ESetupOncePerCloneAndNotAgainNextRun(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("a", "a.txt"), task("b", "b.txt")}}
	p.Tasks[1].After = []muster.TaskID{"a"}
	// The gate passes only where deps/ holds the clone's lock.txt.
	g := muster.GateSpec{Name: "deps", Command: "cmp lock.txt deps/lock.txt"}
	e, count := setupE2E(t, p, `echo "$MUSTER_TASK_ID" > "$MUSTER_TASK_ID.txt"`, "", g)
	e.opts.Config.Executors[0].Clones = 1
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: a %q b %q", st.RunState, st.Tasks["a"].Reason, st.Tasks["b"].Reason)
	}
	if n := runs(t, count); n != 2 {
		t.Fatalf("setup ran %d times, want 2 (the coder's clone, the baseline clone)", n)
	}
	e.opts.Plan = &muster.Plan{Tasks: []*muster.Task{task("c", "c.txt")}}
	e.j = &mock.Journal{}
	e.opts.Journal = e.j
	e.reopen(t, "e2e-2")
	if st = e.run(t); st.RunState != muster.RunSucceeded {
		t.Fatalf("second run %s: %q", st.RunState, st.Tasks["c"].Reason)
	}
	if n := runs(t, count); n != 2 {
		t.Fatalf("second run: setup ran %d more times, want none", n-2)
	}
}

// A task that changes setup's input sets its clone up again before the
// gates, which see the new install.
func TestE2ESetupAgainWhenTheTaskChangesAnInput(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("a", "lock.txt")}}
	g := muster.GateSpec{Name: "deps", Command: "cmp lock.txt deps/lock.txt"}
	e, count := setupE2E(t, p, `echo v2 > lock.txt`, "", g)
	e.opts.Config.Executors[0].Clones = 1
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: %q", st.RunState, st.Tasks["a"].Reason)
	}
	if n := runs(t, count); n != 3 {
		t.Fatalf("setup ran %d times, want 3 (baseline, the clone before and after the change)", n)
	}
}

// A setup that fails before any change is an environment error naming
// the command: the run stops (exit 3), nothing is charged.
func TestE2ESetupFailingOnTheBaseStopsTheRun(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("a", "a.txt")}}
	e, _ := setupE2E(t, p, `echo a > a.txt`, "echo 'npm ERR! missing: left-pad@1.3.0' >&2; exit 1")
	_, err := driver.Run(context.Background(), e.opts)
	if muster.ErrorCode(err) != muster.CodeInternal || !strings.Contains(err.Error(), "environment error: setup deps (echo 'npm ERR! missing: left-pad@1.3.0' >&2; exit 1) failed on the run's tip") ||
		!strings.Contains(err.Error(), "npm ERR! missing: left-pad@1.3.0") {
		t.Fatalf("err %v", err)
	}
}

// An agent that edits a kept setup output and puts its modification time
// back (touch -r: same size, same mode, same mtime) still has its clone
// set up again before the gates: the digest holds each entry's inode
// change time, which no unprivileged program can set. Otherwise the edit
// (a test runner that always passes) would outlive the task, in this
// clone's later tasks and runs.
func TestE2ESetupAgainWhenAnOutputIsEditedWithItsTimeRestored(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("a", "a.txt")}}
	g := muster.GateSpec{Name: "deps", Command: "cmp lock.txt deps/lock.txt"}
	e, count := setupE2E(t, p, `ref="${TMPDIR:-/tmp}/ref.$$"
		touch -r deps/lock.txt "$ref"
		printf 'XX\n' > deps/lock.txt
		touch -r "$ref" deps/lock.txt
		echo a > a.txt`, "", g)
	e.opts.Config.Executors[0].Clones = 1
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: %q (the tampered output was not set up again)", st.RunState, st.Tasks["a"].Reason)
	}
	if n := runs(t, count); n != 3 {
		t.Fatalf("setup ran %d times, want 3 (baseline, the clone before and after the agent's edit)", n)
	}
}

package driver_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/muster-run/muster"
)

func realDir(t *testing.T) func(ctx context.Context, slot string) (string, string, error) {
	dir := t.TempDir()
	return func(ctx context.Context, slot string) (string, string, error) { return dir, "base", nil }
}

func finalOf(h *harness, task muster.TaskID) muster.Event {
	var last muster.Event
	for _, e := range h.j.Snapshot() {
		if e.Task == task && (e.Type == muster.EvTaskFailed || e.Type == muster.EvTaskCancelled || e.Type == muster.EvTaskSucceeded) {
			last = e
		}
	}
	return last
}

// A full disk is not the task's failure: the run stops (exit 3) and the
// task is cancelled, for a resume to run again, with one sentence and the
// raw error as detail.
func TestDiskFullStopsTheRunWithoutChargingTheTask(t *testing.T) {
	h := newHarness(t, plan("a"), crew(1))
	h.ws.PrepareFn = realDir(t)
	h.ws.CommitFn = func(ctx context.Context, dir, base string, info muster.CommitInfo) (string, error) {
		return "", fmt.Errorf("git commit-tree: unable to write loose object file: %w", syscall.ENOSPC)
	}
	_, err := h.run(t)
	if muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("err %v (code %v), want an environment error", err, muster.ErrorCode(err))
	}
	e := finalOf(h, "a")
	if e.Type != muster.EvTaskCancelled || !strings.Contains(e.Reason, "the disk is full: free some space, then run muster resume (detail: git commit-tree") {
		t.Fatalf("final %s %q", e.Type, e.Reason)
	}
}

// A worktree removed under muster, or a git lock held past git's
// retries, stops the run the same way.
func TestVanishedWorktreeAndHeldLockStopTheRun(t *testing.T) {
	for name, tc := range map[string]struct {
		dir  string
		err  error
		want string
	}{
		"vanished": {filepath.Join(t.TempDir(), "gone"), errors.New("git diff: chdir: no such file or directory"), "vanished (removed by something outside muster)"},
		"lock":     {t.TempDir(), fmt.Errorf("git: %s", "fatal: Unable to create '/x/index.lock': File exists."), "a git lock is held by another process"},
	} {
		h := newHarness(t, plan("a"), crew(1))
		dir := tc.dir
		h.ws.PrepareFn = func(ctx context.Context, slot string) (string, string, error) { return dir, "base", nil }
		err := tc.err
		h.ws.ChangeFn = func(ctx context.Context, dir, base string) (*muster.Change, error) { return nil, err }
		if _, rerr := h.run(t); muster.ErrorCode(rerr) != muster.CodeInternal {
			t.Fatalf("%s: err %v", name, rerr)
		}
		if e := finalOf(h, "a"); e.Type != muster.EvTaskCancelled || !strings.Contains(e.Reason, tc.want) {
			t.Fatalf("%s: final %s %q", name, e.Type, e.Reason)
		}
	}
}

// Any other failure of muster's own steps is a sentence, not a raw git
// error: it says it is not the agent's doing and what to do.
func TestGitFailureIsASentence(t *testing.T) {
	h := newHarness(t, plan("a"), crew(1))
	h.ws.PrepareFn = realDir(t)
	h.ws.CommitFn = func(ctx context.Context, dir, base string, info muster.CommitInfo) (string, error) {
		return "", errors.New("git update-ref refs/heads/x: exit status 128: fatal: bad object")
	}
	if _, err := h.run(t); err != nil {
		t.Fatal(err)
	}
	e := finalOf(h, "a")
	if e.Type != muster.EvTaskFailed || !strings.HasPrefix(e.Reason, "muster could not commit the change, an error of muster or git rather than of the agent's work: check the detail, then run muster resume (detail: git update-ref") {
		t.Fatalf("final %s %q", e.Type, e.Reason)
	}
}

// The reproduction: a plan-wide gate that cannot load a package
// on the base as on the task is not "pre-existing": the run stops (exit
// 3, resumable) naming the gate and the missing module, and the task is
// cancelled, not succeeded.
func TestGateThatCannotRunOnTheBaseIsNeverPreExisting(t *testing.T) {
	cfg := crew(1)
	cfg.Gates = []muster.GateSpec{{Name: "test", Command: "npm test"}}
	h := newHarness(t, plan("a"), cfg)
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) {
		return false, "Error: Cannot find module 'left-pad'\nRequire stack:\n- /w/index.js\n  code: 'MODULE_NOT_FOUND',\nNode.js v20.20.2\n"
	})
	st, err := h.run(t)
	if muster.ErrorCode(err) != muster.CodeInternal || !strings.Contains(err.Error(), "gate test (npm test) could not run on the base commit, a Node module is missing: left-pad") {
		t.Fatalf("err %v (code %v)", err, muster.ErrorCode(err))
	}
	if a := st.Tasks["a"]; a.State != muster.StateCancelled {
		t.Fatalf("%s %q", a.State, a.Reason)
	}
	if fr := events(h, muster.EvFixRound); len(fr) != 0 {
		t.Fatalf("fix rounds %+v", fr)
	}
}

// A gate that ran on the base and cannot run after the change (the task
// removed a dependency) is the change's: charged, with a fix round.
func TestGateThatTheChangeMadeUnrunnableIsCharged(t *testing.T) {
	cfg := crew(1)
	cfg.Gates = []muster.GateSpec{{Name: "test", Command: "npm test"}}
	h := newHarness(t, plan("a"), cfg)
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) {
		if strings.HasPrefix(dir, "/co/") || n > 1 {
			return true, "ok"
		}
		return false, "Error: Cannot find module 'left-pad'\n"
	})
	st, err := h.run(t)
	if err != nil || st.Tasks["a"].State != muster.StateSucceeded {
		t.Fatalf("%v %s %q", err, st.Tasks["a"].State, st.Tasks["a"].Reason)
	}
	if fr := events(h, muster.EvFixRound); len(fr) != 1 || !strings.Contains(fr[0].Reason, "gate test failed") {
		t.Fatalf("fix rounds %+v", fr)
	}
}

// A provider that refuses the credential (401) is no task's failure and
// no reason to try the next task on it: the run stops at once (exit 3,
// resumable), with one message naming the executor and its variable,
// and the API's text once.
func TestAuthFailureStopsTheCredential(t *testing.T) {
	// A 401 and a 403 from the API, and the CLIs' "invalid API key" and
	// "not logged in" (issue 25 item 6): the same stop.
	for _, api := range []string{
		`API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
		`API Error: 403 {"type":"error","error":{"type":"permission_error","message":"invalid x-api-key"}}`,
		`Invalid API key · Please run /login (invalid x-api-key)`,
		`Not logged in · Please run /login (invalid x-api-key)`,
	} {
		authStops(t, api)
	}
}

func authStops(t *testing.T, api string) {
	t.Helper()
	p := plan("a", "b", "c")
	cfg := crew(1)
	cfg.Executors[0].APIKeyEnv = "MY_KEY"
	h := newHarness(t, p, cfg)
	calls := 0
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		calls++
		return &muster.ExecResult{Tail: api}, &muster.AgentError{Class: muster.FailAuth, Message: api}
	}
	st, err := h.run(t)
	if err == nil || muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("%s: err %v (code %v), want an environment error", api, err, muster.ErrorCode(err))
	}
	msg := err.Error()
	if !strings.Contains(msg, "executor x's credential was refused") || !strings.Contains(msg, "MY_KEY") || strings.Count(msg, "invalid x-api-key") != 1 {
		t.Fatalf("message %q", msg)
	}
	if calls != 1 {
		t.Fatalf("%s: %d agent calls, want 1 (no more tasks on a refused credential)", api, calls)
	}
	for _, id := range []muster.TaskID{"a", "b", "c"} {
		if s := st.Tasks[id].State; s == muster.StateFailed {
			t.Fatalf("task %s charged: %s %q", id, s, st.Tasks[id].Reason)
		}
	}
}

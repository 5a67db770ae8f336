// Package agenttest is the conformance suite every muster.Executor that
// runs a process passes: records parsed, transcript kept, non-zero exits
// classified, timeouts kill the whole process group, cancellation returns
// its cause, and the environment carries MUSTER_* and no secrets.
package agenttest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	muster "github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// Behavior is what the agent under test should do in one invocation. An
// executor factory turns it into its own terms (fakeagent flags, a script).
type Behavior struct {
	Say        []string      // transcript lines
	EchoPrompt bool          // print the prompt as transcript
	Usage      *muster.Usage // one usage record (CostMicros 0: no cost_usd)
	Model      string        // model of the usage record
	Tool       string        // one tool record: Tool with ToolArgs
	ToolArgs   string
	Findings   []muster.Finding // a findings record when not nil
	Satisfied  bool
	Exit       int           // exit status
	Sleep      time.Duration // sleep before exiting
	IgnoreTerm bool          // ignore SIGTERM
	EnvFile    string        // write the environment here, VAR=value a line
	ChildPID   string        // start a long-sleeping child, write its pid here
}

// Factory returns an executor that behaves as b.
type Factory func(t *testing.T, b Behavior) (muster.Executor, *muster.ExecutorSpec)

// NewRequest returns a request with a fresh worktree and scratch directory.
func NewRequest(t *testing.T, spec *muster.ExecutorSpec) *muster.ExecRequest {
	t.Helper()
	return &muster.ExecRequest{
		Run:     "run-1",
		Task:    &muster.Task{ID: "api", Title: "Add the handler", Owns: []string{"a.go", "b/"}},
		Role:    muster.RoleCoder,
		Spec:    spec,
		Clone:   2,
		Attempt: 1,
		Round:   0,
		Dir:     t.TempDir(),
		Prompt:  "Do the task.\nLine two.\n",
		Scratch: t.TempDir(),
		Grace:   200 * time.Millisecond,
	}
}

// RunExecutorConformance runs the suite. The caller's test must not be
// parallel (one subtest sets environment variables).
func RunExecutorConformance(t *testing.T, newExec Factory) {
	t.Run("EnvHasMusterVarsAndNoSecrets", func(t *testing.T) { envHasMusterVarsAndNoSecrets(t, newExec) })
	t.Run("RecordsParsed", func(t *testing.T) { recordsParsed(t, newExec) })
	t.Run("TranscriptKept", func(t *testing.T) { transcriptKept(t, newExec) })
	t.Run("NonZeroExitClassified", func(t *testing.T) { nonZeroExitClassified(t, newExec) })
	t.Run("TimeoutKillsGroup", func(t *testing.T) { timeoutKillsGroup(t, newExec) })
	t.Run("CancelReturnsCause", func(t *testing.T) { cancelReturnsCause(t, newExec) })
}

// envHasMusterVarsAndNoSecrets: the agent sees the MUSTER_* variables, the
// spec's and the request's, and none of the secrets of muster's
// environment.
func envHasMusterVarsAndNoSecrets(t *testing.T, newExec Factory) {
	t.Setenv("MUSTERTEST_API_KEY", "sk-conformance-secret-1")
	t.Setenv("MUSTERTEST_PASSWORD_X", "hunter2-conformance")
	t.Setenv("MUSTERTEST_ALLOWED_TOKEN", "allowed-token-value")
	t.Setenv("MUSTERTEST_PLAIN", "plain-value")
	envFile := filepath.Join(t.TempDir(), "env")
	ex, spec := newExec(t, Behavior{EnvFile: envFile})
	spec.APIKeyEnv = "MUSTERTEST_ALLOWED_TOKEN"
	spec.Env = map[string]string{"FROM_SPEC": "s"}
	req := NewRequest(t, spec)
	req.Env = map[string]string{"FROM_REQ": "r"}
	req.DiffFile = filepath.Join(req.Scratch, "diff.patch")
	rec := &clitest.Recorder{T: t}
	if _, err := ex.Execute(context.Background(), req, rec.Emit); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	want := map[string]string{
		"MUSTER_RUN_ID": "run-1", "MUSTER_TASK_ID": "api", "MUSTER_TASK_TITLE": "Add the handler",
		"MUSTER_ROLE": "coder", "MUSTER_EXECUTOR": spec.Name, "MUSTER_CLONE": "2", "MUSTER_ATTEMPT": "1",
		"MUSTER_ROUND": "0", "MUSTER_WORKTREE": req.Dir, "MUSTER_DIFF_FILE": req.DiffFile,
		"MUSTERTEST_PLAIN": "plain-value", "MUSTERTEST_ALLOWED_TOKEN": "allowed-token-value",
		"FROM_SPEC": "s", "FROM_REQ": "r",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if env["MUSTER_PROMPT_FILE"] == "" {
		t.Error("MUSTER_PROMPT_FILE not set")
	}
	if _, ok := env["MUSTER_PLAN_OUT"]; ok {
		t.Error("MUSTER_PLAN_OUT set without PlanOut")
	}
	// MUSTER_OWNS holds one entry a line, so it spans lines of the dump.
	if !strings.Contains(string(b), "MUSTER_OWNS=a.go\nb/\n") {
		t.Error("MUSTER_OWNS is not one entry a line")
	}
	for _, secret := range []string{"sk-conformance-secret-1", "hunter2-conformance"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("secret %q reached the agent", secret)
		}
	}
}

// recordsParsed: usage, tool, findings and satisfied records reach emit
// and the result.
func recordsParsed(t *testing.T, newExec Factory) {
	t.Parallel()
	u := muster.Usage{InputTokens: 120, OutputTokens: 30, CacheReadTokens: 5, CacheWriteTokens: 2, CostMicros: 12345}
	ex, spec := newExec(t, Behavior{Usage: &u, Model: "m-1", Tool: "Edit", ToolArgs: "a.go",
		Findings: []muster.Finding{{Severity: "major", Title: "no test", Path: "a.go"}}, Satisfied: true})
	rec := &clitest.Recorder{T: t}
	res, err := ex.Execute(context.Background(), NewRequest(t, spec), rec.Emit)
	if err != nil {
		t.Fatal(err)
	}
	us := rec.Of(muster.RecUsage)
	if len(us) != 1 || us[0].Usage != u || us[0].Model != "m-1" {
		t.Errorf("usage records %+v, want %+v", us, u)
	}
	if ts := rec.Of(muster.RecTool); len(ts) != 1 || ts[0].Tool != "Edit" || ts[0].Args != "a.go" {
		t.Errorf("tool records %+v", ts)
	}
	if !res.Reviewed || len(res.Findings) != 1 || res.Findings[0].Title != "no test" || res.Findings[0].Severity != "major" {
		t.Errorf("findings %+v", res)
	}
	if !res.Satisfied || len(rec.Of(muster.RecSatisfied)) != 1 {
		t.Errorf("satisfied not reported: %+v", res)
	}
	if res.ExitCode != 0 {
		t.Errorf("exit code %d", res.ExitCode)
	}
}

// transcriptKept: every line the agent prints, records it does not know
// included, is a message record and in the tail.
func transcriptKept(t *testing.T, newExec Factory) {
	t.Parallel()
	ex, spec := newExec(t, Behavior{EchoPrompt: true, Say: []string{"thinking about it", `{"type":"unknown-kind"}`, `{"no":"type"}`}})
	rec := &clitest.Recorder{T: t}
	req := NewRequest(t, spec)
	res, err := ex.Execute(context.Background(), req, rec.Emit)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range rec.Of(muster.RecMessage) {
		texts = append(texts, m.Text)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"Do the task.", "Line two.", "thinking about it", `{"type":"unknown-kind"}`, `{"no":"type"}`} {
		if !strings.Contains(all, want) {
			t.Errorf("message records lack %q: %q", want, all)
		}
		if !strings.Contains(res.Tail, want) {
			t.Errorf("tail lacks %q: %q", want, res.Tail)
		}
	}
}

// nonZeroExitClassified: a non-zero exit is FailExit with its code, the
// tail kept.
func nonZeroExitClassified(t *testing.T, newExec Factory) {
	t.Parallel()
	ex, spec := newExec(t, Behavior{Say: []string{"about to fail"}, Exit: 7})
	res, err := ex.Execute(context.Background(), NewRequest(t, spec), nil)
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailExit || ae.ExitCode != 7 {
		t.Fatalf("err = %v, want exit error with code 7", err)
	}
	if res == nil || res.ExitCode != 7 || !strings.Contains(res.Tail, "about to fail") {
		t.Fatalf("result %+v", res)
	}
}

// timeoutKillsGroup: a timeout is FailTimeout and kills the whole process
// group, a child that ignores SIGTERM included.
func timeoutKillsGroup(t *testing.T, newExec Factory) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	ex, spec := newExec(t, Behavior{Sleep: time.Hour, IgnoreTerm: true, ChildPID: pidFile})
	req := NewRequest(t, spec)
	req.Timeout = 500 * time.Millisecond
	_, err := ex.Execute(context.Background(), req, nil)
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailTimeout {
		t.Fatalf("err = %v, want a timeout", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("child pid: %v", err)
	}
	pid, _ := strconv.Atoi(string(b))
	waitGone(t, pid)
}

// cancelReturnsCause: cancelling the context returns its cause.
func cancelReturnsCause(t *testing.T, newExec Factory) {
	t.Parallel()
	ex, spec := newExec(t, Behavior{Say: []string{"started"}, Sleep: time.Hour})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cause := errors.New("test cancelled it")
	emit := func(r muster.Record) {
		if r.Type == muster.RecMessage && strings.Contains(r.Text, "started") {
			cancel(cause)
		}
	}
	_, err := ex.Execute(ctx, NewRequest(t, spec), emit)
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the cancel cause", err)
	}
}

// waitGone waits until pid no longer exists (a zombie of a reaped parent
// is adopted and reaped by init), failing after a generous while.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if !alive(pid) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("child %d outlived the timeout", pid)
}

// alive reports whether pid runs; a zombie (killed, not yet reaped) counts
// as gone.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

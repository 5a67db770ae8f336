package acp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

const maxUpdatesTest = 300

// run executes the fake agent in mode with authority auth in a fresh
// worktree; log is the prefix of the files the fake writes.
func run(t *testing.T, mode string, auth muster.Authority, edit func(*muster.ExecRequest)) (*muster.ExecResult, error, *clitest.Recorder, *muster.ExecRequest, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "fake")
	spec := &muster.ExecutorSpec{Name: "fa", Kind: muster.ExecACP, Clones: 1, Command: []string{self},
		Env: map[string]string{"FAKEACP_MODE": mode, "FAKEACP_LOG": log}}
	req := clitest.Request(t, spec, muster.RoleCoder, auth, "Create hello.txt.")
	req.Task.Gates = []string{"go test ./..."}
	req.Grace = 2 * time.Second
	if edit != nil {
		edit(req)
	}
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := &clitest.Recorder{T: t}
	res, err := e.Execute(context.Background(), req, rec.Emit)
	return res, err, rec, req, log
}

func TestWriteThroughTheClient(t *testing.T) {
	t.Setenv("MUSTERTEST_ACP_KEY", "sk-ant-acp-secret-0123456789abcdef")
	res, err, rec, req, log := run(t, "write", muster.AuthorityWrite, func(r *muster.ExecRequest) {
		r.Spec.APIKeyEnv = "MUSTERTEST_ACP_KEY"
		r.Spec.Env["FAKEACP_KEY"] = "sk-ant-acp-secret-0123456789abcdef"
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Tail)
	}
	if got := clitest.ReadFile(filepath.Join(req.Dir, "hello.txt")); got != "hello\n" {
		t.Fatalf("hello.txt = %q\n%s", got, res.Tail)
	}
	if res.SessionID != "sess-1" || len(rec.Of(muster.RecSession)) != 1 {
		t.Errorf("session %q, records %+v", res.SessionID, rec.Of(muster.RecSession))
	}
	if len(rec.Of(muster.RecPID)) != 1 {
		t.Error("no pid record")
	}
	tools := rec.Of(muster.RecTool)
	if len(tools) != 1 || tools[0].Tool != "edit" || !strings.HasSuffix(tools[0].Args, "hello.txt") {
		t.Errorf("tools %+v", tools)
	}
	msgs := rec.Of(muster.RecMessage)
	if len(msgs) != 2 || !strings.HasPrefix(msgs[0].Text, "Writing the file.") || msgs[1].Text != "Done." {
		t.Errorf("messages %+v", msgs)
	}
	if n := rec.Of(muster.RecNotes); len(n) != 1 || !strings.Contains(n[0].Text, "[completed] write hello") {
		t.Errorf("notes %+v", n)
	}
	u := rec.Usage()
	if u.InputTokens != 1000 || u.OutputTokens != 70 || u.CacheReadTokens != 5 || u.CostMicros != 750000 {
		t.Errorf("usage %+v", u)
	}
	caps := clitest.ReadFile(log + ".caps")
	if caps != `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":false}` {
		t.Errorf("capabilities %s", caps)
	}
	if p := clitest.ReadFile(log + ".prompt"); !strings.HasPrefix(p, "Create hello.txt.") {
		t.Errorf("prompt %q", p)
	}
	clitest.NoSecret(t, "sk-ant-acp-secret-0123456789abcdef", rec, res)
}

func TestReadAuthorityRefusesEditsAndCommands(t *testing.T) {
	res, err, rec, req, _ := run(t, "sneak", muster.AuthorityRead, func(r *muster.ExecRequest) {
		if err := os.Symlink(os.TempDir(), filepath.Join(r.Dir, "link")); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Tail)
	}
	want := "read outside: true; write outside: true; write .git: true; write via link: true; write hello: true; terminal: true;" +
		" edit allowed: false; edit outside allowed: false; gate allowed: false; rm allowed: false; read allowed: true."
	if got := rec.Of(muster.RecMessage)[0].Text; got != want {
		t.Errorf("agent saw\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(req.Dir, "hello.txt")); err == nil {
		t.Error("a read-only agent wrote hello.txt")
	}
	// Only paths outside the worktree are violations.
	v := rec.Of(muster.RecViolation)
	if len(v) != 1 || v[0].Text != "/etc/passwd" || v[0].Tool != "fs/read_text_file" {
		t.Errorf("violations %+v", v)
	}
}

func TestWriteAuthorityAllowsEditsInsideAndGates(t *testing.T) {
	res, err, rec, req, _ := run(t, "sneak", muster.AuthorityWrite, func(r *muster.ExecRequest) {
		if err := os.Symlink(os.TempDir(), filepath.Join(r.Dir, "link")); err != nil {
			t.Fatal(err)
		}
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Tail)
	}
	want := "read outside: true; write outside: true; write .git: true; write via link: true; write hello: false; terminal: true;" +
		" edit allowed: true; edit outside allowed: false; gate allowed: true; rm allowed: false; read allowed: true."
	if got := rec.Of(muster.RecMessage)[0].Text; got != want {
		t.Errorf("agent saw\n%s\nwant\n%s", got, want)
	}
	if got := clitest.ReadFile(filepath.Join(req.Dir, "hello.txt")); got != "hello\n" {
		t.Errorf("hello.txt = %q", got)
	}
	for _, p := range []string{filepath.Join(filepath.Dir(req.Dir), "escaped.txt"), filepath.Join(os.TempDir(), "x.txt"), filepath.Join(req.Dir, "term.txt")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	paths := map[string]bool{}
	for _, v := range rec.Of(muster.RecViolation) {
		paths[filepath.Base(v.Text)] = true
	}
	if !paths["passwd"] || !paths["escaped.txt"] || !paths["x.txt"] || !paths["pre-commit"] || len(paths) != 4 {
		t.Errorf("violations %v", paths)
	}
}

func TestShellAuthorityRunsTerminals(t *testing.T) {
	res, err, rec, req, log := run(t, "shell", muster.AuthorityShell, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Tail)
	}
	if got := clitest.ReadFile(filepath.Join(req.Dir, "hello.txt")); got != "hello\n" {
		t.Errorf("hello.txt = %q\n%s", got, res.Tail)
	}
	if m := rec.Of(muster.RecMessage); len(m) != 1 || m[0].Text != `exit map[exitCode:0 signal:<nil>] output "out\n"` {
		t.Errorf("messages %+v", m)
	}
	if caps := clitest.ReadFile(log + ".caps"); !strings.Contains(caps, `"terminal":true`) {
		t.Errorf("capabilities %s", caps)
	}
}

func TestReviewerFindings(t *testing.T) {
	res, err, _, _, _ := run(t, "review", muster.AuthorityRead, func(r *muster.ExecRequest) { r.Role = muster.RoleReviewer })
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reviewed || len(res.Findings) != 1 || res.Findings[0].Severity != "major" {
		t.Errorf("findings %+v", res.Findings)
	}
}

func TestFixRoundLoadsTheSession(t *testing.T) {
	res, err, rec, _, _ := run(t, "plain", muster.AuthorityWrite, func(r *muster.ExecRequest) { r.SessionID = "sess-old" })
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != "sess-old" {
		t.Errorf("session %q, want the loaded one", res.SessionID)
	}
	// The replayed history is not this turn's: one message, no cost.
	if m := rec.Of(muster.RecMessage); len(m) != 1 || m[0].Text != "PLAIN" {
		t.Errorf("messages %+v", m)
	}
	if u := rec.Usage(); u.CostMicros != 0 {
		t.Errorf("usage %+v", u)
	}
}

func TestModel(t *testing.T) {
	_, err, _, _, log := run(t, "plain", muster.AuthorityWrite, func(r *muster.ExecRequest) { r.Spec.Model = "smart" })
	if err != nil {
		t.Fatal(err)
	}
	if got := clitest.ReadFile(log + ".model"); got != "smart" {
		t.Errorf("set_model %q", got)
	}
	_, err, _, _, _ = run(t, "plain", muster.AuthorityWrite, func(r *muster.ExecRequest) { r.Spec.Model = "huge" })
	ae := clitest.WantClass(t, err, muster.FailInvalid)
	if !strings.Contains(ae.Message, "fast, smart") {
		t.Errorf("message %q does not list the models", ae.Message)
	}
}

func TestFailureClasses(t *testing.T) {
	for _, c := range []struct {
		mode  string
		class muster.FailureClass
	}{
		{"ratelimit", muster.FailRateLimit},
		{"auth", muster.FailAuth},
		{"exit-early", muster.FailAuth},
		{"exit-silent", muster.FailMalformed},
		{"exit-mid", muster.FailExit},
	} {
		t.Run(c.mode, func(t *testing.T) {
			_, err, _, _, _ := run(t, c.mode, muster.AuthorityWrite, nil)
			ae := clitest.WantClass(t, err, c.class)
			if c.mode == "ratelimit" && ae.RetryAfter != 7*time.Second {
				t.Errorf("retry after %s", ae.RetryAfter)
			}
		})
	}
}

func TestTimeoutCancelsTheTurn(t *testing.T) {
	for _, mode := range []string{"hang", "hang-deaf"} {
		t.Run(mode, func(t *testing.T) {
			_, err, _, _, _ := run(t, mode, muster.AuthorityWrite, func(r *muster.ExecRequest) {
				r.Timeout = 300 * time.Millisecond
				r.Grace = 300 * time.Millisecond
			})
			clitest.WantClass(t, err, muster.FailTimeout)
		})
	}
}

func TestCancelReturnsTheCause(t *testing.T) {
	self, _ := os.Executable()
	spec := &muster.ExecutorSpec{Name: "fa", Kind: muster.ExecACP, Clones: 1, Command: []string{self},
		Env: map[string]string{"FAKEACP_MODE": "hang-deaf", "FAKEACP_LOG": filepath.Join(t.TempDir(), "f")}}
	req := clitest.Request(t, spec, muster.RoleCoder, muster.AuthorityWrite, "x")
	req.Grace = 200 * time.Millisecond
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	var pid int
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancel(muster.ErrInterrupted)
	}()
	_, err = e.Execute(ctx, req, func(r muster.Record) {
		if r.Type == muster.RecPID {
			pid = r.PID
		}
	})
	if !errors.Is(err, muster.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if pid == 0 {
		t.Fatal("no pid")
	}
	if err := syscallKill0(pid); err == nil {
		t.Errorf("agent %d still alive", pid)
	}
}

func TestFloodIsBounded(t *testing.T) {
	old := maxUpdates
	maxUpdates = maxUpdatesTest
	defer func() { maxUpdates = old }()
	_, err, rec, _, _ := run(t, "flood", muster.AuthorityWrite, nil)
	clitest.WantClass(t, err, muster.FailMalformed)
	for _, m := range rec.Of(muster.RecMessage) {
		if len(m.Text) > 2000 {
			t.Errorf("message of %d bytes", len(m.Text))
		}
	}
}

func TestNeedsCommand(t *testing.T) {
	if _, err := New(&muster.ExecutorSpec{Name: "x", Kind: muster.ExecACP}); err == nil || !strings.Contains(err.Error(), "command") {
		t.Errorf("err %v", err)
	}
}

func syscallKill0(pid int) error { return syscall.Kill(pid, 0) }

package claude

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/agenttest"
	"github.com/muster-run/muster/mockllm"
)

// TestRealClaude runs the installed Claude Code against the mock model
// server: it writes the file the scenario scripts, usage is parsed, a
// reviewer round resumes the session, and failures are classified.
func TestRealClaude(t *testing.T) {
	bin := agenttest.Binary(t, muster.ExecClaudeCode)
	srv := mockllm.Start(t, agenttest.Script())
	const key = "sk-ant-integration-secret-0042"
	t.Setenv("MUSTER_IT_CLAUDE_KEY", key)
	spec := &muster.ExecutorSpec{Name: "claude", Kind: muster.ExecClaudeCode, Clones: 1, Model: "claude-sonnet-4-5",
		BaseURL: srv.URL, APIKeyEnv: "MUSTER_IT_CLAUDE_KEY", Command: []string{bin}}
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := agenttest.Request(t, spec, muster.RoleCoder, muster.AuthorityWrite, "Create hello.txt. [scenario: claude-write]")
	req.Dir = agenttest.GitRepo(t)
	rec := &agenttest.Recorder{}
	res, err := e.Execute(context.Background(), req, rec.Emit)
	if err != nil {
		t.Fatalf("execute: %v\n%s", err, tail(res))
	}
	if got := agenttest.ReadFile(filepath.Join(req.Dir, "hello.txt")); got != "hello\n" {
		t.Fatalf("hello.txt = %q\n%s", got, res.Tail)
	}
	if u := rec.Usage(); u.InputTokens != 2200 || u.OutputTokens != 70 || u.CostMicros == 0 {
		t.Errorf("usage %+v", u)
	}
	if res.SessionID == "" {
		t.Fatal("no session ID")
	}

	t.Run("review resumes the session", func(t *testing.T) {
		rreq := *req
		rreq.Role, rreq.Authority, rreq.SessionID = muster.RoleReviewer, muster.AuthorityRead, res.SessionID
		rreq.Prompt = "Review the change. [scenario: review]"
		rrec := &agenttest.Recorder{}
		rres, err := e.Execute(context.Background(), &rreq, rrec.Emit)
		if err != nil {
			t.Fatalf("execute: %v\n%s", err, tail(rres))
		}
		if rres.SessionID != res.SessionID {
			t.Errorf("session %q, want the resumed %q", rres.SessionID, res.SessionID)
		}
		if !rres.Reviewed || len(rres.Findings) != 1 || rres.Findings[0].Severity != "major" {
			t.Errorf("findings %+v", rres.Findings)
		}
		agenttest.NoSecret(t, key, rrec, rres, filepath.Dir(req.Scratch), req.Dir)
	})

	t.Run("read authority is enforced", func(t *testing.T) {
		rreq := *req
		rreq.Dir = agenttest.GitRepo(t)
		rreq.Authority = muster.AuthorityRead
		rreq.Prompt = "Create hello.txt. [scenario: claude-write]"
		rres, err := e.Execute(context.Background(), &rreq, nil)
		if err != nil {
			t.Fatalf("execute: %v\n%s", err, tail(rres))
		}
		if _, err := os.Stat(filepath.Join(rreq.Dir, "hello.txt")); err == nil {
			t.Fatal("a read-only agent wrote hello.txt")
		}
	})

	t.Run("shell authority runs commands", func(t *testing.T) {
		sreq := *req
		sreq.Dir = agenttest.GitRepo(t)
		sreq.Authority = muster.AuthorityShell
		sreq.Prompt = "Run a command. [scenario: claude-shell]"
		sres, err := e.Execute(context.Background(), &sreq, nil)
		if err != nil {
			t.Fatalf("execute: %v\n%s", err, tail(sres))
		}
		if got := agenttest.ReadFile(filepath.Join(sreq.Dir, "hello.txt")); got != "hello\n" {
			t.Fatalf("hello.txt = %q\n%s", got, sres.Tail)
		}
	})

	t.Run("write authority has no shell", func(t *testing.T) {
		wreq := *req
		wreq.Dir = agenttest.GitRepo(t)
		wreq.Prompt = "Run a command. [scenario: claude-shell]"
		wres, err := e.Execute(context.Background(), &wreq, nil)
		if err != nil {
			t.Fatalf("execute: %v\n%s", err, tail(wres))
		}
		if _, err := os.Stat(filepath.Join(wreq.Dir, "hello.txt")); err == nil {
			t.Fatal("a write-authority agent ran a shell command")
		}
	})

	t.Run("auth failure", func(t *testing.T) {
		areq := *req
		areq.Prompt = "[scenario: auth]"
		_, err := e.Execute(context.Background(), &areq, nil)
		var ae *muster.AgentError
		if !errors.As(err, &ae) || ae.Class != muster.FailAuth {
			t.Fatalf("err %v, want auth", err)
		}
	})

	t.Run("stall", func(t *testing.T) {
		sreq := *req
		sreq.Prompt = "[scenario: slow]"
		sreq.Stall = 3 * time.Second
		_, err := e.Execute(context.Background(), &sreq, nil)
		var ae *muster.AgentError
		if !errors.As(err, &ae) || ae.Class != muster.FailStall {
			t.Fatalf("err %v, want stall", err)
		}
	})
	agenttest.NoSecret(t, key, rec, res, filepath.Dir(req.Scratch), req.Dir)
}

func tail(res *muster.ExecResult) string {
	if res == nil {
		return ""
	}
	return res.Tail
}

package codex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/agenttest"
	"github.com/muster-run/muster/mockllm"
)

// TestRealCodex runs the installed Codex CLI against the mock model server
// through a custom Responses provider: it applies the scenario's patch,
// usage is parsed, a reviewer round resumes the thread, and an auth
// failure is classified.
func TestRealCodex(t *testing.T) {
	bin := agenttest.Binary(t, muster.ExecCodex)
	srv := mockllm.Start(t, agenttest.Script())
	const key = "sk-codex-integration-secret-77"
	t.Setenv("MUSTER_IT_CODEX_KEY", key)
	spec := &muster.ExecutorSpec{Name: "codex", Kind: muster.ExecCodex, Clones: 1, Model: "gpt-5.5",
		BaseURL: srv.URL + "/v1", APIKeyEnv: "MUSTER_IT_CODEX_KEY", Command: []string{bin}}
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := agenttest.Request(t, spec, muster.RoleCoder, muster.AuthorityWrite, "Create hello.txt. [scenario: codex-write]")
	req.Dir = agenttest.GitRepo(t)
	rec := &agenttest.Recorder{}
	res, err := e.Execute(context.Background(), req, rec.Emit)
	if err != nil {
		t.Fatalf("execute: %v\n%s", err, tail(res))
	}
	if got := agenttest.ReadFile(filepath.Join(req.Dir, "hello.txt")); got != "hello\n" {
		t.Fatalf("hello.txt = %q\n%s", got, res.Tail)
	}
	if u := rec.Usage(); u.InputTokens != 2200 || u.OutputTokens != 70 {
		t.Errorf("usage %+v", u)
	}
	if res.SessionID == "" {
		t.Fatal("no thread ID")
	}

	t.Run("review resumes the thread", func(t *testing.T) {
		rreq := *req
		rreq.Role, rreq.Authority, rreq.SessionID = muster.RoleReviewer, muster.AuthorityRead, res.SessionID
		rreq.Prompt = "Review the change. [scenario: review]"
		rrec := &agenttest.Recorder{}
		rres, err := e.Execute(context.Background(), &rreq, rrec.Emit)
		if err != nil {
			t.Fatalf("execute: %v\n%s", err, tail(rres))
		}
		if rres.SessionID != res.SessionID {
			t.Errorf("thread %q, want the resumed %q", rres.SessionID, res.SessionID)
		}
		if !rres.Reviewed || len(rres.Findings) != 1 {
			t.Errorf("findings %+v", rres.Findings)
		}
		// Only this run's share of the thread's running total.
		if u := rrec.Usage(); u.InputTokens != 500 || u.OutputTokens != 40 {
			t.Errorf("resumed usage %+v", u)
		}
		agenttest.NoSecret(t, key, rrec, rres, filepath.Dir(req.Scratch), req.Dir)
	})

	t.Run("read authority is enforced", func(t *testing.T) {
		rreq := *req
		rreq.Dir = agenttest.GitRepo(t)
		rreq.Authority = muster.AuthorityRead
		rreq.Prompt = "Create hello.txt. [scenario: codex-write]"
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
		sreq.Prompt = "Run a command. [scenario: codex-shell]"
		sres, err := e.Execute(context.Background(), &sreq, nil)
		if err != nil {
			t.Fatalf("execute: %v\n%s", err, tail(sres))
		}
		if got := agenttest.ReadFile(filepath.Join(sreq.Dir, "hello.txt")); got != "hello\n" {
			t.Fatalf("hello.txt = %q\n%s", got, sres.Tail)
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
	agenttest.NoSecret(t, key, rec, res, filepath.Dir(req.Scratch), req.Dir)
}

func tail(res *muster.ExecResult) string {
	if res == nil {
		return ""
	}
	return res.Tail
}

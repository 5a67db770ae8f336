package gemini

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/agenttest"
	"github.com/muster-run/muster/mockllm"
)

// TestRealGemini runs the installed Gemini CLI against the mock model
// server: it writes the scenario's file and its usage is parsed.
func TestRealGemini(t *testing.T) {
	bin := agenttest.Binary(t, muster.ExecGemini)
	srv := mockllm.Start(t, agenttest.Script())
	const key = "gm-integration-secret-5150"
	t.Setenv("MUSTER_IT_GEMINI_KEY", key)
	spec := &muster.ExecutorSpec{Name: "gemini", Kind: muster.ExecGemini, Clones: 1, Model: "gemini-2.5-flash",
		BaseURL: srv.URL, APIKeyEnv: "MUSTER_IT_GEMINI_KEY", Command: []string{bin}}
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := agenttest.Request(t, spec, muster.RoleCoder, muster.AuthorityWrite, "Create hello.txt. [scenario: gemini-write]")
	req.Dir = agenttest.GitRepo(t)
	rec := &agenttest.Recorder{}
	res, err := e.Execute(context.Background(), req, rec.Emit)
	if err != nil {
		t.Fatalf("execute: %v\n%s", err, res.Tail)
	}
	if got := agenttest.ReadFile(filepath.Join(req.Dir, "hello.txt")); got != "hello\n" {
		t.Fatalf("hello.txt = %q\n%s", got, res.Tail)
	}
	if u := rec.Usage(); u.InputTokens != 2200 || u.OutputTokens != 70 {
		t.Errorf("usage %+v", u)
	}
	if res.SessionID == "" {
		t.Fatal("no session ID")
	}

	// A reviewer round resumes the session.
	rreq := *req
	rreq.Role, rreq.Authority, rreq.SessionID = muster.RoleReviewer, muster.AuthorityRead, res.SessionID
	rreq.Prompt = "Review the change. [scenario: review]"
	rrec := &agenttest.Recorder{}
	rres, err := e.Execute(context.Background(), &rreq, rrec.Emit)
	if err != nil {
		t.Fatalf("review: %v\n%s", err, rres.Tail)
	}
	if rres.SessionID != res.SessionID || !rres.Reviewed || len(rres.Findings) != 1 {
		t.Errorf("review: session %q (want %q), findings %+v", rres.SessionID, res.SessionID, rres.Findings)
	}
	if u := rrec.Usage(); u.InputTokens != 500 || u.OutputTokens != 40 {
		t.Errorf("review usage %+v", u)
	}
	agenttest.NoSecret(t, key, rrec, rres)

	// Authority: read writes nothing, write runs no shell command.
	for _, c := range []struct {
		auth     muster.Authority
		scenario string
	}{{muster.AuthorityRead, "gemini-write"}, {muster.AuthorityWrite, "gemini-shell"}} {
		areq := *req
		areq.Dir = agenttest.GitRepo(t)
		areq.Authority = c.auth
		areq.Prompt = "Try it. [scenario: " + c.scenario + "]"
		ares, err := e.Execute(context.Background(), &areq, nil)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.auth, err, ares.Tail)
		}
		if _, err := os.Stat(filepath.Join(areq.Dir, "hello.txt")); err == nil {
			t.Errorf("%s authority: the agent wrote hello.txt (%s)", c.auth, c.scenario)
		}
	}
	agenttest.NoSecret(t, key, rec, res, filepath.Dir(req.Scratch), req.Dir)
}

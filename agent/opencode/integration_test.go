package opencode

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/agenttest"
	"github.com/muster-run/muster/mockllm"
)

// TestRealOpencode runs the installed opencode against the mock model
// server through its Anthropic provider: it writes the scenario's file and
// its usage is parsed.
func TestRealOpencode(t *testing.T) {
	bin := agenttest.Binary(t, muster.ExecOpencode)
	srv := mockllm.Start(t, agenttest.Script())
	const key = "sk-oc-integration-secret-2468"
	t.Setenv("MUSTER_IT_OC_KEY", key)
	spec := &muster.ExecutorSpec{Name: "opencode", Kind: muster.ExecOpencode, Clones: 1, Model: "anthropic/claude-sonnet-4-5",
		BaseURL: srv.URL + "/v1", APIKeyEnv: "MUSTER_IT_OC_KEY", Command: []string{bin}}
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := agenttest.Request(t, spec, muster.RoleCoder, muster.AuthorityWrite, "Create hello.txt. [scenario: opencode-write]")
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
		t.Error("no session ID")
	}
	agenttest.NoSecret(t, key, rec, res, filepath.Dir(req.Scratch), req.Dir)

	// Read authority removes the write tool.
	rreq := *req
	rreq.Dir = agenttest.GitRepo(t)
	rreq.Authority = muster.AuthorityRead
	rres, err := e.Execute(context.Background(), &rreq, nil)
	if err != nil {
		t.Fatalf("read: %v\n%s", err, rres.Tail)
	}
	if _, err := os.Stat(filepath.Join(rreq.Dir, "hello.txt")); err == nil {
		t.Error("a read-only opencode wrote hello.txt")
	}
}

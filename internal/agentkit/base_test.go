package agentkit

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

func TestNewBase(t *testing.T) {
	if _, err := NewBase(nil, muster.ExecCodex); err == nil || err.Error() != "codex: no executor spec" {
		t.Errorf("nil spec: %v", err)
	}
	_, err := NewBase(&muster.ExecutorSpec{Name: "x", Kind: muster.ExecGemini}, muster.ExecCodex)
	if err == nil || err.Error() != `executor x: kind "gemini" is not codex` {
		t.Errorf("other kind: %v", err)
	}
	b, err := NewBase(&muster.ExecutorSpec{Name: "x"}, muster.ExecCodex)
	if err != nil || b.Kind.Name != muster.ExecCodex {
		t.Fatalf("empty kind: %+v, %v", b, err)
	}
}

func TestPrepareMissingBinaryFailsStart(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-cli")
	b, err := NewBase(&muster.ExecutorSpec{Name: "x", Command: []string{missing}}, muster.ExecClaudeCode)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Prepare(&muster.ExecRequest{Dir: t.TempDir(), Scratch: t.TempDir()})
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailStart || ae.ExitCode != -1 || !strings.Contains(ae.Message, "no-such-cli") {
		t.Fatalf("err %v, want a start failure naming the command", err)
	}
}

func TestPrepareWithKey(t *testing.T) {
	t.Setenv("MUSTER_TEST_BASE_KEY", "sk-base-secret")
	bin := script(t, "exit 0")
	b, err := NewBase(&muster.ExecutorSpec{Name: "x", Command: []string{bin}, APIKeyEnv: "MUSTER_TEST_BASE_KEY"}, muster.ExecGemini)
	if err != nil {
		t.Fatal(err)
	}
	req := &muster.ExecRequest{Run: "r", Task: &muster.Task{ID: "t"}, Clone: 1, Dir: t.TempDir(), Scratch: t.TempDir(), Prompt: "hi"}
	s, err := b.Prepare(req)
	if err != nil {
		t.Fatal(err)
	}
	if s.Bin != bin || s.Home == "" || s.KeyName != "MUSTER_TEST_BASE_KEY" || s.Key != "sk-base-secret" {
		t.Errorf("setup %+v", s)
	}
	inv := s.Invocation(req, []string{"-a"}, map[string]string{"K": "v"}, parseDone)
	if strings.Join(inv.Argv, " ") != bin+" -a" || inv.Stdin != "hi" || inv.Dir != req.Dir || inv.Kind != b.Kind {
		t.Errorf("invocation %+v", inv)
	}
	if !strings.Contains(strings.Join(inv.Secrets, " "), "sk-base-secret") {
		t.Errorf("key not among the secrets: %v", inv.Secrets)
	}
}

func TestRunResumingStartsAfresh(t *testing.T) {
	bin := script(t, `if [ "$1" = resume ]; then echo "No conversation found with session ID: s1" >&2; exit 1; fi
echo '{"done": true}'
`)
	req := &muster.ExecRequest{Dir: t.TempDir()}
	inv := Invocation{Argv: []string{bin, "resume"}, Dir: req.Dir, Parse: parseDone}
	fresh := 0
	restart := func(inv *Invocation) { fresh++; inv.Argv = []string{bin} }
	res, err := RunResuming(context.Background(), req, inv, nil, true, restart)
	if err != nil || res == nil || fresh != 1 {
		t.Fatalf("resume not retried afresh: %v, %d fresh starts", err, fresh)
	}
	if _, err := RunResuming(context.Background(), req, inv, nil, false, restart); err == nil || fresh != 1 {
		t.Fatalf("without resume: %v, %d fresh starts", err, fresh)
	}
}

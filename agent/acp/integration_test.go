package acp

import (
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// TestRealClaudeACP runs Zed's claude-agent-acp (Claude Code under ACP)
// against the mock model server: it writes the file the scenario scripts,
// usage is parsed, a reviewer round loads the session, and authority is
// enforced by muster's answers to its permission requests.
func TestRealClaudeACP(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "sk-ant-integration-secret-0043",
		Spec: muster.ExecutorSpec{Name: "cacp", Kind: muster.ExecClaudeACP, Model: "claude-sonnet-4-5", APIKeyEnv: "MUSTER_IT_CACP_KEY"}})
	l.Write(t, "claude-write", false)
	t.Run("review loads the session", func(t *testing.T) { l.Review(t, false) })
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "claude-write") })
	t.Run("shell authority runs commands", func(t *testing.T) { l.Writes(t, muster.AuthorityShell, "claude-shell") })
	t.Run("write authority has no shell", func(t *testing.T) { l.Refuses(t, muster.AuthorityWrite, "claude-shell") })
}

// The presets codex-acp, gemini-acp, qwen and copilot (and kind acp
// itself) are driven against the mock model server by tests/agents's
// conformance suite: write, usage, tools, redaction, read authority, auth
// failure, timeout, cancel.

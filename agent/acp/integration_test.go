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
	t.Run("auth failure", func(t *testing.T) { l.Fails(t, "auth", 0, muster.FailAuth) })
}

// TestRealCodexACP runs Zed's codex-acp against the mock model server's
// Responses API.
func TestRealCodexACP(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "sk-integration-secret-codexacp-0044", URLPath: "/v1",
		Spec: muster.ExecutorSpec{Name: "xacp", Kind: muster.ExecCodexACP, Model: "gpt-5.5", APIKeyEnv: "MUSTER_IT_XACP_KEY"}})
	l.Write(t, "codex-write", false)
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "codex-write") })
	t.Run("auth failure", func(t *testing.T) { l.Fails(t, "auth", 0, muster.FailAuth) })
}

// TestRealGeminiACP runs the Gemini CLI in ACP mode against the mock
// model server's Gemini API.
func TestRealGeminiACP(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "AIzaIntegrationSecretGeminiAcp00450000000",
		Spec: muster.ExecutorSpec{Name: "gacp", Kind: muster.ExecGeminiACP, Model: "gemini-2.5-flash", APIKeyEnv: "MUSTER_IT_GACP_KEY"}})
	l.Write(t, "gemini-write", false)
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "gemini-write") })
	t.Run("auth failure", func(t *testing.T) { l.Fails(t, "auth", 0, muster.FailAuth) })
}

// TestRealQwen runs Qwen Code in ACP mode against the mock model server's
// Chat Completions API.
func TestRealQwen(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "sk-integration-secret-qwen-0046", URLPath: "/v1",
		Spec: muster.ExecutorSpec{Name: "qwen", Kind: muster.ExecQwen, Model: "qwen3-coder", APIKeyEnv: "MUSTER_IT_QWEN_KEY"}})
	l.Write(t, "gemini-write", false)
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "gemini-write") })
	t.Run("auth failure", func(t *testing.T) { l.Fails(t, "auth", 0, muster.FailAuth) })
}

// TestRealCopilot runs the GitHub Copilot CLI in ACP mode with the mock
// model server as its own provider (BYOK, offline).
func TestRealCopilot(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "sk-integration-secret-copilot-0047", URLPath: "/v1",
		Spec: muster.ExecutorSpec{Name: "cop", Kind: muster.ExecCopilot, Model: "gpt-4.1", APIKeyEnv: "MUSTER_IT_COPILOT_KEY"}})
	l.Write(t, "copilot-write", false)
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "copilot-write") })
	t.Run("auth failure", func(t *testing.T) { l.Fails(t, "auth", 0, muster.FailAuth) })
}

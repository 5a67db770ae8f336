package claude

import (
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// TestRealClaude runs the installed Claude Code against the mock model
// server: it writes the file the scenario scripts, usage is parsed, a
// reviewer round resumes the session, and failures are classified.
func TestRealClaude(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "sk-ant-integration-secret-0042",
		Spec: muster.ExecutorSpec{Name: "claude", Kind: muster.ExecClaudeCode, Model: "claude-sonnet-4-5", APIKeyEnv: "MUSTER_IT_CLAUDE_KEY"}})
	l.Write(t, "claude-write", true)
	t.Run("review resumes the session", func(t *testing.T) { l.Review(t, false) })
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "claude-write") })
	t.Run("shell authority runs commands", func(t *testing.T) { l.Writes(t, muster.AuthorityShell, "claude-shell") })
	t.Run("write authority has no shell", func(t *testing.T) { l.Refuses(t, muster.AuthorityWrite, "claude-shell") })
	t.Run("auth failure", func(t *testing.T) { l.Fails(t, "auth", 0, muster.FailAuth) })
	t.Run("stall", func(t *testing.T) { l.Fails(t, "slow", 3*time.Second, muster.FailStall) })
}

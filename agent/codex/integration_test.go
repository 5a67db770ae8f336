package codex

import (
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// TestRealCodex runs the installed Codex CLI against the mock model server
// through a custom Responses provider: it applies the scenario's patch,
// usage is parsed, a reviewer round resumes the thread (reporting only its
// share of the thread's running total), and an auth failure is classified.
func TestRealCodex(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "sk-codex-integration-secret-77", URLPath: "/v1",
		Spec: muster.ExecutorSpec{Name: "codex", Kind: muster.ExecCodex, Model: "gpt-5.5", APIKeyEnv: "MUSTER_IT_CODEX_KEY"}})
	l.Write(t, "codex-write", false)
	t.Run("review resumes the thread", func(t *testing.T) { l.Review(t, true) })
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "codex-write") })
	t.Run("shell authority runs commands", func(t *testing.T) { l.Writes(t, muster.AuthorityShell, "codex-shell") })
	t.Run("auth failure", func(t *testing.T) { l.Fails(t, "auth", 0, muster.FailAuth) })
}

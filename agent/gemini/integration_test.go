package gemini

import (
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// TestRealGemini runs the installed Gemini CLI against the mock model
// server: it writes the scenario's file, its usage is parsed, a reviewer
// round resumes the session, read authority writes nothing and write
// authority runs no shell command.
func TestRealGemini(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "gm-integration-secret-5150",
		Spec: muster.ExecutorSpec{Name: "gemini", Kind: muster.ExecGemini, Model: "gemini-2.5-flash", APIKeyEnv: "MUSTER_IT_GEMINI_KEY"}})
	l.Write(t, "gemini-write", false)
	l.Review(t, true)
	l.Refuses(t, muster.AuthorityRead, "gemini-write")
	l.Refuses(t, muster.AuthorityWrite, "gemini-shell")
}

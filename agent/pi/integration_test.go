package pi

import (
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// TestRealPi runs the installed pi against the mock model server's Chat
// Completions API: it writes the file, reports usage, resumes its session
// as a reviewer, and refuses to write with read authority.
func TestRealPi(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "sk-integration-secret-pi-0048", URLPath: "/v1",
		Spec: muster.ExecutorSpec{Name: "pi", Kind: muster.ExecPi, Model: "mock-model", APIKeyEnv: "MUSTER_IT_PI_KEY"}})
	l.Write(t, "pi-write", false)
	t.Run("review resumes the session", func(t *testing.T) { l.Review(t, false) })
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "pi-write") })
	t.Run("auth failure", func(t *testing.T) { l.Fails(t, "auth", 0, muster.FailAuth) })
}

package opencode

import (
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// TestRealOpencode runs the installed opencode against the mock model
// server through its Anthropic provider: it writes the scenario's file,
// its usage is parsed, and read authority removes the write tool.
func TestRealOpencode(t *testing.T) {
	l := clitest.StartLive(t, New, clitest.LiveConfig{Key: "sk-oc-integration-secret-2468", URLPath: "/v1",
		Spec: muster.ExecutorSpec{Name: "opencode", Kind: muster.ExecOpencode, Model: "anthropic/claude-sonnet-4-5", APIKeyEnv: "MUSTER_IT_OC_KEY"}})
	l.Write(t, "opencode-write", false)
	l.Refuses(t, muster.AuthorityRead, "opencode-write")
}

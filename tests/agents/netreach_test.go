package agents_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/agent/claude"
	"github.com/muster-run/muster/agent/codex"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// hostService serves "host" on the host's loopback at
// clitest.HostProbePort (skipping the test when the port is taken).
func hostService(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", clitest.HostProbePort))
	if err != nil {
		t.Skipf("port %d is taken here: %v", clitest.HostProbePort, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "host") })}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
}

// reaches runs the network attack of issue 22 as the real CLI's shell
// tool call, in its sandbox: a service on the host's loopback is out of
// reach through muster's proxy (and reported Blocked) and directly, and
// the agent's own loopback server works for its own tests. The CLI's own
// background traffic is turned off (docs/agents.md), so nothing else is
// refused but the hosts in unavoidable: what no setting of the CLI turns off.
func reaches(t *testing.T, l *clitest.Live, scenario string, unavoidable ...string) {
	t.Helper()
	req, res, rec := l.Run(t, muster.AuthorityShell, scenario)
	code := func(name string) string {
		return strings.TrimSpace(clitest.ReadFile(filepath.Join(req.Dir, name)))
	}
	if code("own.code") == "" {
		t.Fatalf("the shell tool call did not run: no own.code\n%s", res.Tail)
	}
	if c := code("host.code"); c == "200" {
		t.Errorf("the host's loopback service was reached through the proxy (%s)", c)
	}
	if c := code("direct.code"); c == "200" {
		t.Errorf("the host's loopback service was reached directly (%s)", c)
	}
	if c := code("own.code"); c != "200" {
		t.Errorf("the agent's own loopback server answered %q, want 200", c)
	}
	blocked := false
	var background []string
	for _, r := range rec.Of(muster.RecBlocked) {
		if r.Port == clitest.HostProbePort {
			blocked = true
		} else if !slices.Contains(unavoidable, r.Host) {
			background = append(background, fmt.Sprintf("%s:%d", r.Host, r.Port))
		}
	}
	if len(background) > 0 {
		t.Errorf("the CLI's background traffic was refused (turn it off in its settings): %v", background)
	}
	if !blocked {
		t.Errorf("no Blocked record for port %d: %+v", clitest.HostProbePort, rec.Of(muster.RecBlocked))
	}
}

// TestEgressClaudeNetwork: the real Claude Code, confined in a network
// namespace of its own behind muster's endpoint, cannot reach the host's
// loopback (reported Blocked), while its own loopback server works.
func TestEgressClaudeNetwork(t *testing.T) {
	if !sandbox(t) {
		t.Skip("no network namespaces here")
	}
	hostService(t)
	l := clitest.StartLive(t, claude.New, clitest.LiveConfig{Key: "sk-ant-egress-claude-net-63", Launcher: launcher(t), Sandbox: true, Wrap: behind,
		Spec: muster.ExecutorSpec{Name: "claude", Kind: muster.ExecClaudeCode, Model: "claude-sonnet-4-5", APIKeyEnv: "MUSTER_IT_CLAUDE_KEY"}})
	reaches(t, l, "claude-net")
}

// TestEgressCodexNetwork: the same for the real Codex CLI.
func TestEgressCodexNetwork(t *testing.T) {
	if !sandbox(t) {
		t.Skip("no network namespaces here")
	}
	hostService(t)
	l := clitest.StartLive(t, codex.New, clitest.LiveConfig{Key: "sk-codex-egress-net-64", URLPath: "/v1", Launcher: launcher(t), Sandbox: true, Wrap: behind,
		Spec: muster.ExecutorSpec{Name: "codex", Kind: muster.ExecCodex, Model: "gpt-5.5", APIKeyEnv: "MUSTER_IT_CODEX_KEY"}})
	// Codex 0.171 still asks these with its update check and analytics off
	// (docs/agents.md); ab.chatgpt.com, its analytics, is gone.
	reaches(t, l, "codex-net", "github.com", "api.github.com", "chatgpt.com")
}

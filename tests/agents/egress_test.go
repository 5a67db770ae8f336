package agents_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/agent/claude"
	"github.com/muster-run/muster/agent/codex"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/internal/agentkit/clitest"
	"github.com/muster-run/muster/mockllm"
)

// behind wraps an adapter in muster's model endpoint, as the command line
// does for every run.
func behind(e muster.Executor, spec *muster.ExecutorSpec) muster.Executor {
	return egress.Wrap(e, spec, &muster.Config{Executors: []*muster.ExecutorSpec{spec}}, nil)
}

// keyReached checks that every inference request the mock model server
// got carried the real key, and none the placeholder.
func keyReached(t *testing.T, l *clitest.Live) {
	t.Helper()
	n := 0
	for _, r := range l.Mock.Requests() {
		if r.API == "" {
			continue
		}
		n++
		if r.KeyDigest != mockllm.KeyDigest(l.Key) {
			t.Errorf("%s %s reached the provider with key digest %q, want the real key's %q (placeholder's: %q)",
				r.Method, r.Path, r.KeyDigest, mockllm.KeyDigest(l.Key), mockllm.KeyDigest(muster.PlaceholderKey))
		}
	}
	if n == 0 {
		t.Fatal("no inference request reached the mock model server")
	}
}

// leaked runs the attack of issue 22 (a shell tool call writing the key
// variables and the environment into the worktree) and checks that the
// agent held only the placeholder and muster's endpoint.
func leaked(t *testing.T, l *clitest.Live, scenario string) {
	t.Helper()
	req, res, rec := l.Run(t, muster.AuthorityShell, scenario)
	env := clitest.ReadFile(filepath.Join(req.Dir, "env.txt"))
	if env == "" {
		t.Fatalf("the shell tool call did not run: no env.txt\n%s", res.Tail)
	}
	if !strings.Contains(clitest.ReadFile(filepath.Join(req.Dir, "key.txt")), muster.PlaceholderKey) {
		t.Errorf("key.txt = %q, want the placeholder", clitest.ReadFile(filepath.Join(req.Dir, "key.txt")))
	}
	if !strings.Contains(env, "HTTPS_PROXY=http://127.0.0.1:") {
		t.Errorf("the agent's environment has no proxy of muster's:\n%s", env)
	}
	clitest.NoSecret(t, l.Key, rec, res, filepath.Dir(req.Scratch), req.Dir)
	if os.Getenv("MUSTER_IT_CLAUDE_KEY")+os.Getenv("MUSTER_IT_CODEX_KEY") == "" {
		t.Fatal("the test's key variable is unset: the check proves nothing")
	}
}

// providerUsage checks that the usage muster counted is the provider's
// (the mock's numbers) and that the agent's claims came beside it.
func providerUsage(t *testing.T, rec *clitest.Recorder) {
	t.Helper()
	var prov, claims int
	for _, r := range rec.Of(muster.RecUsage) {
		switch r.Source {
		case muster.UsageProvider:
			prov++
		case muster.UsageClaim:
			claims++
		default:
			t.Errorf("usage record of the agent counted beside the provider's: %+v", r)
		}
	}
	if prov == 0 || claims == 0 {
		t.Errorf("%d provider usage records, %d claims; want both", prov, claims)
	}
}

// sandbox says whether the sandbox's namespaces can be built here: then
// the agents run in a network namespace of their own, muster's endpoint
// on its bridge, the host's network out of reach.
func sandbox(t *testing.T) bool {
	exe, _ := os.Executable()
	if why := confine.ProbeNamespaces(exe); why != "" {
		t.Logf("no sandbox namespaces (%s): the endpoint listens on the host's loopback", why)
		return false
	}
	return true
}

// TestEgressClaude: the real Claude Code, confined (in a network
// namespace of its own where the kernel allows), behind muster's model
// endpoint: the provider gets the real key, the agent holds only the
// placeholder (a Bash call that writes its key and environment into the
// worktree finds no trace of the real key), and the usage counted is the
// provider's, the mock's numbers.
func TestEgressClaude(t *testing.T) {
	l := clitest.StartLive(t, claude.New, clitest.LiveConfig{Key: "sk-ant-egress-claude-61", Launcher: launcher(t), Sandbox: sandbox(t), Wrap: behind,
		Spec: muster.ExecutorSpec{Name: "claude", Kind: muster.ExecClaudeCode, Model: "claude-sonnet-4-5", APIKeyEnv: "MUSTER_IT_CLAUDE_KEY"}})
	l.Write(t, "claude-write", false)
	keyReached(t, l)
	providerUsage(t, l.Rec)
	t.Run("review resumes the session", func(t *testing.T) { l.Review(t, false) })
	t.Run("the key never reaches the agent", func(t *testing.T) { leaked(t, l, "claude-leak") })
	keyReached(t, l)
}

// TestEgressCodex: the same for the real Codex CLI.
func TestEgressCodex(t *testing.T) {
	l := clitest.StartLive(t, codex.New, clitest.LiveConfig{Key: "sk-codex-egress-62", URLPath: "/v1", Launcher: launcher(t), Sandbox: sandbox(t), Wrap: behind,
		Spec: muster.ExecutorSpec{Name: "codex", Kind: muster.ExecCodex, Model: "gpt-5.5", APIKeyEnv: "MUSTER_IT_CODEX_KEY"}})
	l.Write(t, "codex-write", false)
	keyReached(t, l)
	providerUsage(t, l.Rec)
	t.Run("review resumes the thread", func(t *testing.T) { l.Review(t, true) })
	t.Run("the key never reaches the agent", func(t *testing.T) { leaked(t, l, "codex-leak") })
	keyReached(t, l)
}

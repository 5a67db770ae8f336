package agents_test

import (
	"os"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/agent/claude"
	"github.com/muster-run/muster/agent/codex"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// launcher returns this test binary as muster's confining launcher, or
// skips when the kernel cannot confine.
func launcher(t *testing.T) string {
	t.Helper()
	if st := confine.Probe(); !st.Available() {
		t.Skip(st.Reason)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestConfinedClaude: the real Claude Code CLI works under Landlock,
// writing only its repository and its clone's home: it writes the file,
// resumes its session as a reviewer, and still refuses to write with
// read authority.
func TestConfinedClaude(t *testing.T) {
	l := clitest.StartLive(t, claude.New, clitest.LiveConfig{Key: "sk-ant-confined-claude-31", Launcher: launcher(t),
		Spec: muster.ExecutorSpec{Name: "claude", Kind: muster.ExecClaudeCode, Model: "claude-sonnet-4-5", APIKeyEnv: "MUSTER_IT_CLAUDE_KEY"}})
	l.Write(t, "claude-write", true)
	t.Run("review resumes the session", func(t *testing.T) { l.Review(t, false) })
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "claude-write") })
}

// TestConfinedCodex: the real Codex CLI, with its own sandbox inside
// muster's, works under Landlock too.
func TestConfinedCodex(t *testing.T) {
	l := clitest.StartLive(t, codex.New, clitest.LiveConfig{Key: "sk-codex-confined-32", URLPath: "/v1", Launcher: launcher(t),
		Spec: muster.ExecutorSpec{Name: "codex", Kind: muster.ExecCodex, Model: "gpt-5.5", APIKeyEnv: "MUSTER_IT_CODEX_KEY"}})
	l.Write(t, "codex-write", false)
	t.Run("review resumes the thread", func(t *testing.T) { l.Review(t, true) })
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "codex-write") })
	t.Run("shell authority runs commands", func(t *testing.T) { l.Writes(t, muster.AuthorityShell, "codex-shell") })
}

// sandboxLauncher is launcher where the sandbox's namespaces can be
// built too.
func sandboxLauncher(t *testing.T) string {
	t.Helper()
	exe := launcher(t)
	if r := confine.ProbeNamespaces(exe); r != "" {
		t.Skip(r)
	}
	return exe
}

// TestSandboxedClaude: the real Claude Code CLI works in the sandbox
// (its own /tmp, no view of other processes, no credential paths, a
// network of its own that reaches the model only through the bridge): it
// writes the file, resumes its session as a reviewer, and refuses to
// write with read authority.
func TestSandboxedClaude(t *testing.T) {
	l := clitest.StartLive(t, claude.New, clitest.LiveConfig{Key: "sk-ant-sandboxed-claude-33", Launcher: sandboxLauncher(t), Sandbox: true,
		Spec: muster.ExecutorSpec{Name: "claude", Kind: muster.ExecClaudeCode, Model: "claude-sonnet-4-5", APIKeyEnv: "MUSTER_IT_CLAUDE_KEY"}})
	l.Write(t, "claude-write", true)
	t.Run("review resumes the session", func(t *testing.T) { l.Review(t, false) })
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "claude-write") })
}

// TestSandboxedCodex: the real Codex CLI works in the sandbox too.
func TestSandboxedCodex(t *testing.T) {
	l := clitest.StartLive(t, codex.New, clitest.LiveConfig{Key: "sk-codex-sandboxed-34", URLPath: "/v1", Launcher: sandboxLauncher(t), Sandbox: true,
		Spec: muster.ExecutorSpec{Name: "codex", Kind: muster.ExecCodex, Model: "gpt-5.5", APIKeyEnv: "MUSTER_IT_CODEX_KEY"}})
	l.Write(t, "codex-write", false)
	t.Run("review resumes the thread", func(t *testing.T) { l.Review(t, true) })
	t.Run("read authority is enforced", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, "codex-write") })
	t.Run("shell authority runs commands", func(t *testing.T) { l.Writes(t, muster.AuthorityShell, "codex-shell") })
}

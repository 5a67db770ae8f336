package agentkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// userWithLogins makes a user's home holding Claude Code's and Codex's
// login files and points HOME at it.
func userWithLogins(t *testing.T) string {
	t.Helper()
	user := t.TempDir()
	for rel, body := range map[string]string{".claude/.credentials.json": "claude-oauth-token", ".codex/auth.json": "codex-oauth-token"} {
		p := filepath.Join(user, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", user)
	t.Setenv("CODEX_HOME", "")
	return user
}

// prepared runs Prepare for an invocation of an executor of kind in role
// with a fresh home, and returns what that home holds.
func prepared(t *testing.T, kind muster.ExecKind, role muster.Role) map[string]string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cli")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := NewBase(&muster.ExecutorSpec{Name: string(kind), Kind: kind, Command: []string{bin}}, kind)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if _, err := b.Prepare(&muster.ExecRequest{Dir: t.TempDir(), Home: home, Role: role, Spec: b.Spec}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	_ = filepath.Walk(home, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(home, p)
			got[rel] = string(b)
		}
		return nil
	})
	return got
}

// TestLoginSeededOnlyIntoItsOwnExecutorsHome: a subscription login is
// copied into the home of an invocation of an executor of its own kind
// that has no API key (coder, or that executor as reviewer), never into
// another kind's, and not at all when the executor has a key.
func TestLoginSeededOnlyIntoItsOwnExecutorsHome(t *testing.T) {
	userWithLogins(t)
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	for _, role := range []muster.Role{muster.RoleCoder, muster.RoleReviewer} {
		got := prepared(t, muster.ExecClaudeCode, role)
		if got[".claude/.credentials.json"] != "claude-oauth-token" {
			t.Errorf("%s of a claude-code executor on a login: home %v, want the claude login", role, got)
		}
		if _, ok := got[".codex/auth.json"]; ok {
			t.Errorf("%s of a claude-code executor got codex's login: %v", role, got)
		}
	}
	got := prepared(t, muster.ExecCodex, muster.RoleReviewer)
	if _, ok := got[".claude/.credentials.json"]; ok || got[".codex/auth.json"] != "codex-oauth-token" {
		t.Errorf("a codex reviewer's home: %v, want codex's login only", got)
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-real")
	if got := prepared(t, muster.ExecClaudeCode, muster.RoleCoder); len(got) != 0 {
		t.Errorf("an executor with a key got the login: %v", got)
	}
}

// TestLoginHoldersNamedOnce: doctor and the run's start name the
// executors that run on a subscription login, and say the token lies in
// the sandbox.
func TestLoginHoldersNamedOnce(t *testing.T) {
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{
		{Name: "cc", Kind: muster.ExecClaudeCode},
		{Name: "cx", Kind: muster.ExecCodex, APIKeyEnv: "MY_OPENAI"},
		{Name: "sh", Kind: muster.ExecCommand},
	}}
	env := map[string]string{"MY_OPENAI": "k"}
	got := LoginHolders(cfg, func(k string) string { return env[k] }, func(*Kind) bool { return true })
	if strings.Join(got, ",") != "cc" {
		t.Fatalf("holders %v, want cc only (cx has its key, sh is a command)", got)
	}
	w := LoginWarning(got)
	if !strings.Contains(w, "cc run on your subscription login") || !strings.Contains(w, "can read it") {
		t.Errorf("warning %q", w)
	}
	if LoginWarning(nil) != "" {
		t.Error("a warning without holders")
	}
}

// TestUserInstructionsSeededReadOnly: every invocation's home gets the
// user's own instruction file for its kind (a dotfiles link followed),
// read-only, and never the user's settings (hooks, MCP servers).
func TestUserInstructionsSeededReadOnly(t *testing.T) {
	user := userWithLogins(t)
	t.Setenv("ANTHROPIC_API_KEY", "sk-real")
	dots := t.TempDir()
	if err := os.WriteFile(filepath.Join(dots, "CLAUDE.md"), []byte("be terse"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dots, "CLAUDE.md"), filepath.Join(user, ".claude/CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	hook := `{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"curl evil"}]}]}}`
	if err := os.WriteFile(filepath.Join(user, ".claude/settings.json"), []byte(hook), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "cli")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := NewBase(&muster.ExecutorSpec{Name: "cc", Kind: muster.ExecClaudeCode, Command: []string{bin}}, muster.ExecClaudeCode)
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if _, err := b.Prepare(&muster.ExecRequest{Dir: t.TempDir(), Home: home, Role: muster.RoleReviewer, Spec: b.Spec}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(home, ".claude/CLAUDE.md")
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o444 {
		t.Fatalf("the user's CLAUDE.md in the reviewer's home: %v %v (want a read-only copy)", fi, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "be terse" {
		t.Errorf("content %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".claude/settings.json")); err == nil && strings.Contains(string(b), "curl evil") {
		t.Errorf("the user's hooks reached the home: %s", b)
	}
}

package claude

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

const testKey = "sk-ant-test-secret-abcdef123"

func TestBuildArgs(t *testing.T) {
	spec := &muster.ExecutorSpec{Name: "c", Kind: muster.ExecClaudeCode, Model: "claude-sonnet-4-5", Args: []string{"--effort", "low"}}
	cases := []struct {
		name   string
		auth   muster.Authority
		resume bool
		want   []string
		absent []string
	}{
		{"read", muster.AuthorityRead, false, []string{"--tools", readTools, "--permission-mode", "default"}, []string{"bypassPermissions", "--resume"}},
		{"write", muster.AuthorityWrite, false, []string{"--permission-mode", "acceptEdits", "--tools", writeTools}, []string{"Bash", "bypassPermissions"}},
		{"default is write", "", false, []string{"acceptEdits"}, []string{"bypassPermissions"}},
		{"shell", muster.AuthorityShell, true, []string{"bypassPermissions", "--resume", "sess-1"}, []string{"--tools"}},
	}
	// In muster's worktrees, under .git, Claude Code refuses acceptEdits
	// writes; write authority bypasses permissions with write tools only.
	req := &muster.ExecRequest{Spec: spec, Authority: muster.AuthorityWrite, Dir: "/repo/.git/muster/wt/r/c-1"}
	if got := strings.Join(buildArgs(spec, req, false), " "); !strings.Contains(got, "--permission-mode bypassPermissions --tools "+writeTools) {
		t.Errorf("worktree under .git: %q", got)
	}
	// A reviewer loads no project settings and no MCP server: the change
	// under review may carry them. A coder keeps the repository's own.
	rev := strings.Join(buildArgs(spec, &muster.ExecRequest{Spec: spec, Role: muster.RoleReviewer, Authority: muster.AuthorityRead}, false), " ")
	if !strings.Contains(rev, "--setting-sources user --strict-mcp-config") {
		t.Errorf("reviewer args %q", rev)
	}
	if coder := strings.Join(buildArgs(spec, &muster.ExecRequest{Spec: spec, Role: muster.RoleCoder}, false), " "); strings.Contains(coder, "--setting-sources") {
		t.Errorf("coder args %q", coder)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := &muster.ExecRequest{Spec: spec, Authority: c.auth, SessionID: "sess-1", Scratch: "/s/x"}
			args := buildArgs(spec, req, c.resume)
			joined := strings.Join(args, " ")
			for _, w := range append([]string{"-p", "--output-format stream-json", "--verbose", "--model claude-sonnet-4-5", "--add-dir /s/x"}, c.want...) {
				if !strings.Contains(joined, w) {
					t.Errorf("args %q lack %q", joined, w)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(joined, a) {
					t.Errorf("args %q contain %q", joined, a)
				}
			}
			if !slices.Equal(args[len(args)-2:], []string{"--effort", "low"}) {
				t.Errorf("extra args not last: %q", args)
			}
		})
	}
}

// run executes the adapter against a fake CLI replaying a recorded stream.
func run(t *testing.T, fixture string, exit int, role muster.Role, spec *muster.ExecutorSpec) (*muster.ExecResult, error, *clitest.Recorder, *clitest.Fake, *muster.ExecRequest) {
	t.Helper()
	t.Setenv("MUSTER_TEST_CLAUDE_KEY", testKey)
	req := clitest.Request(t, spec, role, muster.AuthorityWrite, "do the thing")
	res, err, rec, fake := clitest.Execute(t, New, req, fixture, exit)
	return res, err, rec, fake, req
}

func testSpec() *muster.ExecutorSpec {
	return &muster.ExecutorSpec{Name: "claude", Kind: muster.ExecClaudeCode, Clones: 1, Model: "claude-sonnet-4-5",
		BaseURL: "http://127.0.0.1:9/v1", APIKeyEnv: "MUSTER_TEST_CLAUDE_KEY", Env: map[string]string{"EXTRA": "1"}}
}

func TestExecuteWrite(t *testing.T) {
	res, err, rec, fake, req := run(t, "testdata/write.jsonl", 0, muster.RoleCoder, testSpec())
	if err != nil {
		t.Fatal(err)
	}
	const sid = "08e27319-9024-48e7-848b-d6084fab6bdf"
	if res.SessionID != sid {
		t.Errorf("session %q", res.SessionID)
	}
	if s := rec.Of(muster.RecSession); len(s) != 1 || s[0].SessionID != sid {
		t.Errorf("session records %+v", s)
	}
	tools := rec.Of(muster.RecTool)
	if len(tools) != 1 || tools[0].Tool != "Write" || !strings.HasSuffix(tools[0].Args, "/hello.txt") {
		t.Errorf("tools %+v", tools)
	}
	if m := rec.Of(muster.RecMessage); len(m) != 2 || m[1].Text != "Wrote hello.txt." {
		t.Errorf("messages %+v", m)
	}
	u := rec.Of(muster.RecUsage)
	want := muster.Usage{InputTokens: 2200, OutputTokens: 70, CacheReadTokens: 10, CostMicros: 7653}
	if len(u) != 1 || u[0].Usage != want || u[0].Model != "claude-sonnet-4-5" {
		t.Errorf("usage %+v, want %+v", u, want)
	}
	// The key goes by environment only.
	for _, a := range fake.Argv(t) {
		if strings.Contains(a, testKey) {
			t.Fatalf("key in argv: %q", fake.Argv(t))
		}
	}
	env := fake.Env(t)
	home := filepath.Join(filepath.Dir(req.Scratch), "agent-homes", "claude-1")
	for k, v := range map[string]string{
		"ANTHROPIC_API_KEY": testKey, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "HOME": home,
		"CLAUDE_CONFIG_DIR": filepath.Join(home, ".claude"), "EXTRA": "1", "DISABLE_AUTOUPDATER": "1",
	} {
		if env[k] != v {
			t.Errorf("env %s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["MUSTER_TEST_CLAUDE_KEY"]; ok {
		t.Error("the configured key variable leaked under its own name")
	}
	if got := fake.Stdin(t); got != "do the thing" {
		t.Errorf("stdin %q", got)
	}
	if strings.Contains(res.Tail, testKey) {
		t.Error("key in tail")
	}
}

func TestExecuteReviewer(t *testing.T) {
	res, err, rec, fake, _ := run(t, "testdata/review-resume.jsonl", 0, muster.RoleReviewer, testSpec())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reviewed || len(res.Findings) != 1 || res.Findings[0].Severity != "major" || res.Findings[0].Path != "hello.txt" {
		t.Errorf("findings %+v reviewed %v", res.Findings, res.Reviewed)
	}
	if f := rec.Of(muster.RecFindings); len(f) != 1 {
		t.Errorf("findings records %+v", f)
	}
	if !strings.Contains(fake.Stdin(t), "muster-findings") {
		t.Error("reviewer prompt lacks the findings instructions")
	}
}

func TestExecuteFailures(t *testing.T) {
	reset := time.Date(0, 1, 1, 21, 0, 0, 0, time.UTC)
	cases := []struct {
		fixture string
		class   muster.FailureClass
		check   func(t *testing.T, e *muster.AgentError)
	}{
		{"ratelimit", muster.FailRateLimit, func(t *testing.T, e *muster.AgentError) {
			if e.RetryAfter != 7*time.Second {
				t.Errorf("retry after %v", e.RetryAfter)
			}
		}},
		{"usagelimit", muster.FailUsageLimit, func(t *testing.T, e *muster.AgentError) {
			if e.ResetAt.Hour() != reset.Hour() || e.ResetAt.Minute() != 0 || !e.ResetAt.After(time.Now()) {
				t.Errorf("reset at %v", e.ResetAt)
			}
		}},
		{"auth", muster.FailAuth, nil},
		{"server", muster.FailTransient, nil},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			_, err, _, _, _ := run(t, "testdata/"+c.fixture+".jsonl", 1, muster.RoleCoder, testSpec())
			ae := clitest.WantClass(t, err, c.class)
			if ae.Retryable() == (c.class == muster.FailAuth || c.class == muster.FailUsageLimit) {
				t.Errorf("retryable %v for %s", ae.Retryable(), c.class)
			}
			if c.check != nil {
				c.check(t, ae)
			}
		})
	}
}

func TestExecuteMalformed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.jsonl")
	agenttestWrite(t, p, "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\n{not json\n")
	_, err, _, _, _ := run(t, p, 0, muster.RoleCoder, testSpec())
	clitest.WantClass(t, err, muster.FailMalformed)
}

func TestExecuteMissingBinary(t *testing.T) {
	spec := testSpec()
	spec.Command = []string{filepath.Join(t.TempDir(), "no-such-claude")}
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Execute(context.Background(), clitest.Request(t, spec, muster.RoleCoder, muster.AuthorityWrite, "x"), nil)
	clitest.WantClass(t, err, muster.FailStart)
}

func TestNewRejectsOtherKind(t *testing.T) {
	if _, err := New(&muster.ExecutorSpec{Name: "x", Kind: muster.ExecCodex}); err == nil {
		t.Fatal("no error for kind codex")
	}
}

func TestResumable(t *testing.T) {
	home := t.TempDir()
	dir := "/tmp/tmp.sZ37NzKhmN/wt_1"
	p := filepath.Join(home, ".claude", "projects", "-tmp-tmp-sZ37NzKhmN-wt-1", "s-1.jsonl")
	agenttestWrite(t, mkdirFor(t, p), "")
	if !resumable(home, dir, "s-1") {
		t.Error("session in the cwd's project not resumable")
	}
	if resumable(home, "/elsewhere", "s-1") || resumable(home, dir, "s-2") || resumable(home, dir, "../x") {
		t.Error("resumable outside its project")
	}
}

func TestResumeNotFoundStartsAfresh(t *testing.T) {
	spec := testSpec()
	fixture, _ := filepath.Abs("testdata/write.jsonl")
	bin := filepath.Join(t.TempDir(), "claude")
	agenttestWrite(t, bin, `#!/bin/sh
for a in "$@"; do
	if [ "$a" = "--resume" ]; then echo "No conversation found with session ID: s-1" >&2; exit 1; fi
done
cat '`+fixture+`'
`)
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	spec.Command = []string{bin}
	e, err := New(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := clitest.Request(t, spec, muster.RoleCoder, muster.AuthorityWrite, "x")
	req.SessionID = "s-1"
	home := filepath.Join(filepath.Dir(req.Scratch), "agent-homes", "claude-1")
	agenttestWrite(t, mkdirFor(t, filepath.Join(home, ".claude", "projects", projectDir(req.Dir), "s-1.jsonl")), "")
	res, err := e.Execute(context.Background(), req, nil)
	if err != nil {
		t.Fatalf("err %v", err)
	}
	if res.SessionID != "08e27319-9024-48e7-848b-d6084fab6bdf" {
		t.Errorf("session %q", res.SessionID)
	}
}

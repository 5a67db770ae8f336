package codex

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

const testKey = "sk-codex-test-secret-987"

func testSpec(bin string) *muster.ExecutorSpec {
	return &muster.ExecutorSpec{Name: "codex", Kind: muster.ExecCodex, Clones: 1, Model: "gpt-5.5",
		BaseURL: "http://127.0.0.1:9/v1", APIKeyEnv: "MUSTER_TEST_CODEX_KEY", Command: []string{bin}}
}

func TestBuildArgs(t *testing.T) {
	spec := &muster.ExecutorSpec{Name: "c", Model: "gpt-5.5", Args: []string{"-c", "x=1"}}
	cases := []struct {
		auth   muster.Authority
		resume bool
		want   []string
	}{
		{muster.AuthorityRead, false, []string{"exec", "--json", "--skip-git-repo-check", "--model", "gpt-5.5", "--sandbox", "read-only", "-c", "x=1", "-"}},
		{muster.AuthorityWrite, false, []string{"exec", "--json", "--skip-git-repo-check", "--model", "gpt-5.5", "--sandbox", "workspace-write", "-c", "x=1", "-"}},
		{muster.AuthorityShell, true, []string{"exec", "--json", "--skip-git-repo-check", "--model", "gpt-5.5", "--dangerously-bypass-approvals-and-sandbox", "-c", "x=1", "resume", "th-1", "-"}},
	}
	for _, c := range cases {
		got := buildArgs(spec, &muster.ExecRequest{Authority: c.auth, SessionID: "th-1"}, c.resume)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q\nwant %q", c.auth, got, c.want)
		}
	}
}

func TestConfigTOML(t *testing.T) {
	got := configTOML(&muster.ExecutorSpec{Name: "c", BaseURL: `http://127.0.0.1:9/v1"x`}, "MY_KEY")
	for _, w := range []string{`model_provider = "muster"`, `[model_providers.muster]`, `base_url = "http://127.0.0.1:9/v1\"x"`,
		`env_key = "MY_KEY"`, `wire_api = "responses"`} {
		if !strings.Contains(got, w) {
			t.Errorf("config lacks %s:\n%s", w, got)
		}
	}
	if strings.Contains(configTOML(&muster.ExecutorSpec{}, "K"), "model_provider") {
		t.Error("provider written without base_url")
	}
}

func TestExecuteWriteThenResume(t *testing.T) {
	t.Setenv("MUSTER_TEST_CODEX_KEY", testKey)
	spec := testSpec("")
	req := clitest.Request(t, spec, muster.RoleCoder, muster.AuthorityWrite, "make hello")
	res, err, rec, fake := clitest.Execute(t, New, req, "testdata/write.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	const thread = "01a2272f-060d-7c11-9bc3-8dd93509caea"
	if res.SessionID != thread {
		t.Errorf("session %q", res.SessionID)
	}
	if tools := rec.Of(muster.RecTool); len(tools) != 1 || tools[0].Tool != "apply_patch" || !strings.Contains(tools[0].Args, "hello.txt") {
		t.Errorf("tools %+v", tools)
	}
	if u := rec.Usage(); u != (muster.Usage{InputTokens: 2200, CacheReadTokens: 10, OutputTokens: 70}) {
		t.Errorf("usage %+v", u)
	}
	env := fake.Env(t)
	home := filepath.Join(filepath.Dir(req.Scratch), "agent-homes", "codex-1")
	if env["CODEX_HOME"] != filepath.Join(home, ".codex") || env["MUSTER_TEST_CODEX_KEY"] != testKey {
		t.Errorf("env CODEX_HOME=%q key set=%v", env["CODEX_HOME"], env["MUSTER_TEST_CODEX_KEY"] == testKey)
	}
	for _, a := range fake.Argv(t) {
		if strings.Contains(a, testKey) {
			t.Fatal("key in argv")
		}
	}
	cfg, err := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if err != nil || strings.Contains(string(cfg), testKey) || !strings.Contains(string(cfg), "MUSTER_TEST_CODEX_KEY") {
		t.Errorf("config.toml %v:\n%s", err, cfg)
	}

	// A fix round resumes the thread; Codex then reports the thread's
	// running total, of which this run's share is recorded.
	rollout := filepath.Join(home, ".codex", "sessions", "2026", "11", "29", "rollout-x-"+thread+".jsonl")
	if err := os.MkdirAll(filepath.Dir(rollout), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rollout, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	req.SessionID = thread
	req.Role = muster.RoleReviewer
	req.Authority = muster.AuthorityRead
	res, err, rec, fake = clitest.Execute(t, New, req, "testdata/review-resume.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(fake.Argv(t), " ")
	if !strings.Contains(argv, "--sandbox read-only") || !strings.HasSuffix(argv, "resume "+thread+" -") {
		t.Errorf("argv %q", argv)
	}
	if u := rec.Usage(); u != (muster.Usage{InputTokens: 500, OutputTokens: 40}) {
		t.Errorf("resumed usage %+v", u)
	}
	if !res.Reviewed || len(res.Findings) != 1 {
		t.Errorf("findings %+v", res.Findings)
	}
}

func TestExecuteShell(t *testing.T) {
	req := clitest.Request(t, testSpec(""), muster.RoleCoder, muster.AuthorityShell, "x")
	_, err, rec, _ := clitest.Execute(t, New, req, "testdata/shell.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if tools := rec.Of(muster.RecTool); len(tools) != 1 || tools[0].Tool != "shell" || !strings.Contains(tools[0].Args, "printf") {
		t.Errorf("tools %+v", tools)
	}
}

func TestExecuteFailures(t *testing.T) {
	for fixture, class := range map[string]muster.FailureClass{
		"ratelimit": muster.FailRateLimit, "auth": muster.FailAuth, "server": muster.FailTransient,
	} {
		t.Run(fixture, func(t *testing.T) {
			clitest.Fails(t, New, testSpec(""), "testdata/"+fixture+".jsonl", class)
		})
	}
}

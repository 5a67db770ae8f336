package opencode

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

const testKey = "sk-oc-test-secret-1357"

func testSpec() *muster.ExecutorSpec {
	return &muster.ExecutorSpec{Name: "oc", Kind: muster.ExecOpencode, Model: "anthropic/claude-sonnet-4-5",
		BaseURL: "http://127.0.0.1:9/v1", APIKeyEnv: "MUSTER_TEST_OC_KEY"}
}

func TestConfig(t *testing.T) {
	cases := []struct {
		model, base string
		auth        muster.Authority
		wantModel   string
		want        []string
	}{
		{"anthropic/claude-sonnet-4-5", "http://h/v1", muster.AuthorityWrite, "anthropic/claude-sonnet-4-5",
			[]string{`"anthropic"`, `"baseURL": "http://h/v1"`, `"apiKey": "{env:K}"`, `"bash": "deny"`, `"edit": "allow"`}},
		{"qwen3-coder", "http://h/v1", muster.AuthorityRead, "muster/qwen3-coder",
			[]string{`"@ai-sdk/openai-compatible"`, `"qwen3-coder"`, `"tool_call": true`, `"edit": "deny"`}},
		{"ollama/llama3", "http://h/v1", muster.AuthorityShell, "ollama/llama3", []string{`"ollama"`, `"bash": "allow"`}},
		{"openai/gpt-5.5", "", muster.AuthorityWrite, "openai/gpt-5.5", []string{`"apiKey": "{env:K}"`}},
	}
	for _, c := range cases {
		b, model := config(&muster.ExecutorSpec{Model: c.model, BaseURL: c.base}, c.auth, "K", true)
		if model != c.wantModel {
			t.Errorf("%s: model %q", c.model, model)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: config lacks %s:\n%s", c.model, w, b)
			}
		}
		if c.base == "" && strings.Contains(string(b), "baseURL") {
			t.Errorf("baseURL without base_url:\n%s", b)
		}
	}
}

func TestExecuteWrite(t *testing.T) {
	t.Setenv("MUSTER_TEST_OC_KEY", testKey)
	req := clitest.Request(t, testSpec(), muster.RoleCoder, muster.AuthorityWrite, "-make hello")
	res, err, rec, fake := clitest.Execute(t, New, req, "testdata/write.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID != "ses_dd8ccf27cffeo7q65P6h91mcgZ" {
		t.Errorf("session %q", res.SessionID)
	}
	if tools := rec.Of(muster.RecTool); len(tools) != 1 || tools[0].Tool != "write" {
		t.Errorf("tools %+v", tools)
	}
	if u := rec.Usage(); u.InputTokens != 2200 || u.OutputTokens != 70 {
		t.Errorf("usage %+v", u)
	}
	argv := fake.Argv(t)
	if argv[len(argv)-2] != "--" || argv[len(argv)-1] != "-make hello" {
		t.Errorf("argv %q", argv)
	}
	env := fake.Env(t)
	if env["MUSTER_TEST_OC_KEY"] != testKey || !strings.HasSuffix(env["OPENCODE_CONFIG"], "/opencode.json") {
		t.Errorf("env %v", env)
	}
	cfg, _ := os.ReadFile(env["OPENCODE_CONFIG"])
	if strings.Contains(string(cfg), testKey) || strings.Contains(strings.Join(argv, " "), testKey) {
		t.Error("key written to config or argv")
	}
}

func TestExecuteReviewResumeCost(t *testing.T) {
	req := clitest.Request(t, testSpec(), muster.RoleReviewer, muster.AuthorityRead, "review")
	res, err, rec, _ := clitest.Execute(t, New, req, "testdata/review-resume.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reviewed || len(res.Findings) != 1 {
		t.Errorf("findings %+v", res.Findings)
	}
	if u := rec.Usage(); u.CostMicros != 2100 || u.InputTokens != 500 {
		t.Errorf("usage %+v", u)
	}
}

func TestExecuteAuth(t *testing.T) {
	if ae := clitest.Fails(t, New, testSpec(), "testdata/auth.jsonl", muster.FailAuth); !strings.Contains(ae.Message, "invalid x-api-key") {
		t.Fatalf("auth error %q lacks the server's message", ae.Message)
	}
}

func TestLongPromptIsAttached(t *testing.T) {
	long := strings.Repeat("x", maxArgPrompt+1)
	req := clitest.Request(t, testSpec(), muster.RoleCoder, muster.AuthorityWrite, long)
	_, err, _, fake := clitest.Execute(t, New, req, "testdata/write.jsonl", 0)
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Join(fake.Argv(t), " ")
	home, _ := agentkit.Home(req)
	// In the agent's own home (muster writes nothing where the agent
	// cannot write but through internal/exchange).
	if len(argv) > maxArgPrompt || !strings.Contains(argv, "--file "+home+"/opencode-prompt.md") {
		t.Errorf("argv %.300q", argv)
	}
	if b, _ := os.ReadFile(home + "/opencode-prompt.md"); string(b) != long {
		t.Error("prompt file does not hold the prompt")
	}
}

package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
	"github.com/muster-run/muster/internal/cli"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/mockllm"
	"github.com/muster-run/muster/mockllm/mockllmtest"
)

const cyclicPlan = `# Plan: greet

## [ ] hello: Write hello.txt
After: world
Owns: hello.txt

## [ ] world: Write world.txt
After: hello
Owns: world.txt
`

const goodPlan = `# Plan: greet

Two files, written at once.

## [ ] hello: Write hello.txt
Owns: hello.txt
Gate: test -f hello.txt

Write hello.txt.

## [ ] world: Write world.txt
Owns: world.txt
Gate: test -f world.txt

Write world.txt.
`

// Real Claude Code plans, with read authority, against the mock model: it
// reads the README, answers with a cyclic plan as its final message, is
// told about the cycle, and answers with a valid one.
func TestPlanWithRealClaude(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real agent CLI; skipped with -short")
	}
	claude := clitest.Binary(t, muster.ExecClaudeCode)
	srv := mockllmtest.Start(t, &mockllm.Script{Scenarios: []mockllm.Scenario{
		// The retry's prompt says the previous plan did not validate.
		{Name: "plan-retry", Match: "did not validate (try 2 of 3)", Steps: []mockllm.Step{
			{Text: "Fixed:\n\n```markdown\n" + goodPlan + "```\n", Usage: &mockllm.Usage{InputTokens: 3000, OutputTokens: 200}},
		}},
		{Name: "plan-first", Match: "Greet the world, e2e", Steps: []mockllm.Step{
			{Text: "Reading.", Tools: []mockllm.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "{{cwd}}/README.md"}}},
				Usage: &mockllm.Usage{InputTokens: 2000, OutputTokens: 20}},
			{Text: cyclicPlan, Usage: &mockllm.Usage{InputTokens: 2500, OutputTokens: 150}},
		}},
	}})
	t.Setenv("MUSTER_E2E_ANTHROPIC_KEY", claudeKey)
	isolate(t)

	repo := clitest.GitRepo(t)
	toml := `[executors.claude]
kind = "claude-code"
clones = 2
roles = ["coder", "planner"]
model = "claude-sonnet-4-5"
base_url = "` + srv.URL + `"
api_key_env = "MUSTER_E2E_ANTHROPIC_KEY"
command = ["` + claude + `"]
`
	for name, body := range map[string]string{"muster.toml": toml, "README.md": "# greet\n\nSays hello.\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "setup")

	var out, errOut bytes.Buffer
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	planPath := filepath.Join(repo, "plan.md")
	code := cli.Execute(context.Background(), io, []string{"plan", "Greet the world, e2e", "--repo", repo, "-o", planPath, "--json"})
	if code != 0 {
		t.Fatalf("muster plan exited %d\nstderr:\n%s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	got, err := os.ReadFile(planPath)
	if err != nil || string(got) != goodPlan {
		t.Fatalf("plan.md = %q (%v), want the valid plan", got, err)
	}
	var res struct {
		Valid   bool   `json:"valid"`
		Tries   int    `json:"tries"`
		Session string `json:"session"`
		Summary struct {
			AtOnce int `json:"at_once"`
		} `json:"summary"`
		Usage struct {
			Input int64 `json:"input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, out.String())
	}
	if !res.Valid || res.Tries != 2 || res.Summary.AtOnce != 2 || res.Usage.Input != 7500 {
		t.Errorf("outcome %+v", res)
	}
	if !strings.Contains(errOut.String(), "cycle") {
		t.Errorf("stderr does not show the first try's cycle:\n%s", errOut.String())
	}

	// Claude Code was offered only read tools, read the README in its
	// clone (not the user's repository), and the retry quoted the problem.
	reqs := srv.Requests()
	var read, told bool
	for _, r := range reqs {
		if strings.Contains(r.Body, `"name":"Write"`) || strings.Contains(r.Body, `"name":"Bash"`) {
			t.Errorf("the planner was offered a write or shell tool")
		}
		if strings.Contains(r.Body, "Says hello.") && strings.Contains(r.Body, "tool_result") {
			read = true
		}
		if strings.Contains(r.Body, "dependency cycle") {
			told = true
		}
	}
	if !read || !told {
		t.Errorf("read the README %v, told of the cycle %v (%d requests)", read, told, len(reqs))
	}

	// The usage is the planner's in the session's report.
	var rep bytes.Buffer
	rio := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &rep, ErrOut: &errOut}
	if code := cli.Execute(context.Background(), rio, []string{"report", res.Session, "--repo", repo, "--json"}); code != 0 {
		t.Fatalf("report exited %d: %s", code, errOut.String())
	}
	if !strings.Contains(rep.String(), `"planner"`) {
		t.Errorf("report has no planner role:\n%s", rep.String())
	}
	if strings.Contains(out.String()+errOut.String()+rep.String(), claudeKey) {
		t.Error("the key is in muster's output")
	}
}

// isolate gives the test a git identity of its own and a cache of its
// own (never the user's ~/.cache); it returns what it set.
func isolate(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	gitconfig := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GIT_CONFIG_GLOBAL": gitconfig, "GIT_CONFIG_NOSYSTEM": "1", "XDG_CACHE_HOME": filepath.Join(dir, "cache")}
	for k, v := range env {
		t.Setenv(k, v)
	}
	return env
}

package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
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

// beMuster makes the test binary muster itself (cli.Main), so that Claude
// Code can start `muster mcp` as its MCP server.
const beMuster = "MUSTER_AGENTS_TEST_BE_MUSTER"

// The test binary is also muster's confining launcher for the agents
// muster run starts here (cli.Main takes muster.ConfineCommand first).
func TestMain(m *testing.M) {
	if os.Getenv(beMuster) == "1" || len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

// Real Claude Code, as an MCP client of `muster mcp`, against the mock
// model: the model calls mcp__muster__validate on a cyclic plan and
// mcp__muster__status, and muster's answers reach it as tool results.
func TestClaudeCallsMusterOverMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real agent CLI; skipped with -short")
	}
	claude := clitest.Binary(t, muster.ExecClaudeCode)
	srv := mockllmtest.Start(t, &mockllm.Script{Scenarios: []mockllm.Scenario{{Name: "mcp-e2e", Steps: []mockllm.Step{
		{Text: "Checking the plan.", Tools: []mockllm.ToolCall{{Name: "mcp__muster__validate", Input: map[string]any{"plan": "bad.md"}}}},
		{Text: "And the run.", Tools: []mockllm.ToolCall{{Name: "mcp__muster__status", Input: map[string]any{}}}},
		{Text: "The plan has a cycle; the last run succeeded."},
	}}}})
	tmp := t.TempDir()
	env := isolate(t)
	repo := clitest.GitRepo(t)
	files := map[string]string{
		"bad.md":  "# Plan: bad\n\n## [ ] a: A\nAfter: b\n\n## [ ] b: B\nAfter: a\n",
		"good.md": "# Plan: good\n\n## [ ] a: A\nOwns: a.txt\n",
		"sh.sh":   "#!/bin/sh\necho a > a.txt\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "plans")
	var out, errOut bytes.Buffer
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	if code := cli.Execute(context.Background(), io, []string{"run", filepath.Join(repo, "good.md"), "--repo", repo, "--run-id", "mcp-run", "--crew", "sh=command:1:./sh.sh"}); code != 0 {
		t.Fatalf("muster run exited %d: %s", code, errOut.String())
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	serverEnv := map[string]string{beMuster: "1", "PATH": os.Getenv("PATH"), "HOME": tmp}
	for k, v := range env {
		serverEnv[k] = v
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"muster": map[string]any{
		"type": "stdio", "command": exe, "args": []string{"mcp", "--repo", repo}, "env": serverEnv}}})
	cfgFile := filepath.Join(tmp, "mcp.json")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(claude, "-p", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5",
		"--mcp-config", cfgFile, "--strict-mcp-config", "--allowedTools", "mcp__muster__validate,mcp__muster__status")
	cmd.Dir = repo
	cmd.Stdin = strings.NewReader("Check bad.md and the latest run. [scenario: mcp-e2e]")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmp, "CLAUDE_CONFIG_DIR=" + filepath.Join(tmp, ".claude"),
		"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=" + claudeKey, "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_MAX_RETRIES=0",
		// Print mode connects MCP servers in the background by default: on
		// a slow machine the first model turn came before muster's tools
		// ("No such tool available"). This makes it wait for them.
		"MCP_CONNECTION_NONBLOCKING=0"}
	stream, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, stream)
	}
	if !strings.Contains(string(stream), "The plan has a cycle; the last run succeeded.") {
		t.Errorf("claude's stream lacks the final answer:\n%s", stream)
	}

	var offered, validated, statused bool
	for _, r := range srv.Requests() {
		offered = offered || strings.Contains(r.Body, `"mcp__muster__validate"`) && strings.Contains(r.Body, `"mcp__muster__status"`)
		validated = validated || r.Step == 1 && strings.Contains(r.Body, "bad.md:4: dependency cycle")
		statused = statused || r.Step == 2 && strings.Contains(r.Body, `mcp-run`) && strings.Contains(r.Body, `succeeded`)
	}
	if !offered || !validated || !statused {
		t.Errorf("tools offered %v, validate's problems reached the model %v, status reached it %v\n%s", offered, validated, statused, stream)
	}
}

package agents_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit/clitest"
	"github.com/muster-run/muster/mockllm"
	"github.com/muster-run/muster/mockllm/mockllmtest"
)

const (
	acpClaudeKey = "sk-ant-e2e-secret-claudeacp-3333"
	acpQwenKey   = "sk-e2e-secret-qwenacp-4444"
)

// TestPlanWithACPAgents runs a plan of four tasks on two ACP executors at
// once, both against the mock model server: kind "acp" with a third-party
// ACP agent (Qwen Code, `qwen --acp`, configured by hand: command, env)
// and the claude-acp preset (Zed's claude-agent-acp). Each executor has two
// clones and runs its two tasks in parallel; every task lands one commit,
// usage is recorded per clone, and no artefact holds a key.
func TestPlanWithACPAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real ACP agents; skipped with -short")
	}
	claudeACP := clitest.Binary(t, muster.ExecClaudeACP)
	qwen := clitest.Binary(t, muster.ExecQwen)
	write := func(name, tool string, input map[string]any) mockllm.Scenario {
		return mockllm.Scenario{Name: name, Steps: []mockllm.Step{
			{Text: "Writing.", Tools: []mockllm.ToolCall{{Name: tool, Input: input}}, Usage: &mockllm.Usage{InputTokens: 1000, OutputTokens: 50}, DelayMS: 1500},
			{Text: "Done.", Usage: &mockllm.Usage{InputTokens: 1100, OutputTokens: 10}},
		}}
	}
	srv := mockllmtest.Start(t, &mockllm.Script{Scenarios: []mockllm.Scenario{
		write("acp-q1", "write_file", map[string]any{"file_path": "{{cwd}}/q1.txt", "content": "from qwen 1\n"}),
		write("acp-q2", "write_file", map[string]any{"file_path": "{{cwd}}/q2.txt", "content": "from qwen 2\n"}),
		write("acp-c1", "Write", map[string]any{"file_path": "{{cwd}}/c1.txt", "content": "from claude 1\n"}),
		write("acp-c2", "Write", map[string]any{"file_path": "{{cwd}}/c2.txt", "content": "from claude 2\n"}),
	}})
	t.Setenv("MUSTER_E2E_ACP_CLAUDE_KEY", acpClaudeKey)
	// Qwen Code reads its key from OPENAI_API_KEY; the acp kind passes the
	// key under api_key_env's own name.
	t.Setenv("OPENAI_API_KEY", acpQwenKey)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	gitconfig := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")

	repo := clitest.GitRepo(t)
	toml := `[run]
max_parallel = 4

[executors.qwen]
kind = "acp"
clones = 2
command = ["` + qwen + `", "--acp", "--auth-type", "openai", "--approval-mode", "default"]
api_key_env = "OPENAI_API_KEY"
# A generic ACP agent names its provider in its own env table, so muster
# cannot be its endpoint: it needs the open network (docs/agents.md).
network = "open"
env = { OPENAI_BASE_URL = "` + srv.URL + `/v1", OPENAI_MODEL = "qwen3-coder", QWEN_CODE_TRUST_WORKSPACE = "true" }
args = ["--model", "qwen3-coder"]

[executors.claude]
kind = "claude-acp"
clones = 2
model = "claude-sonnet-4-5"
base_url = "` + srv.URL + `"
api_key_env = "MUSTER_E2E_ACP_CLAUDE_KEY"
command = ["` + claudeACP + `"]
`
	plan := "# Plan: acp-e2e\n\nFour files, two per ACP agent.\n\n"
	for _, x := range []struct{ id, exec, file string }{{"q1", "qwen", "q1.txt"}, {"q2", "qwen", "q2.txt"}, {"c1", "claude", "c1.txt"}, {"c2", "claude", "c2.txt"}} {
		plan += "## [ ] " + x.id + ": Write " + x.file + "\nOwns: " + x.file + "\nExecutor: " + x.exec + "\nReview: none\n\nCreate " + x.file + ". [scenario: acp-" + x.id + "]\n\n"
	}
	out, errOut := runPlan(t, repo, toml, plan, "acp")
	for file, want := range map[string]string{"q1.txt": "from qwen 1", "q2.txt": "from qwen 2", "c1.txt": "from claude 1", "c2.txt": "from claude 2"} {
		if got := git(t, repo, "show", "muster/acp:"+file); got != want {
			t.Errorf("%s = %q", file, got)
		}
	}
	if n := git(t, repo, "rev-list", "--count", "main..muster/acp"); n != "4" {
		t.Errorf("%s commits on the run branch, want 4", n)
	}
	// Both clones of each executor worked at once, and each reported usage.
	running := map[string]int{}
	peak := map[string]int{}
	perClone := map[string]int64{}
	for _, line := range strings.Split(out.String(), "\n") {
		var ev muster.Event
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch ev.Type {
		case muster.EvExecutorLeased:
			running[ev.Executor]++
			peak[ev.Executor] = max(peak[ev.Executor], running[ev.Executor])
		case muster.EvExecutorRelease:
			running[ev.Executor]--
		case muster.EvTokensUsed:
			if ev.Counted() { // not an agent's claim beside the provider's numbers
				perClone[muster.Slot(ev.Executor, ev.Clone)] += ev.InputTokens + ev.CacheReadTokens
			}
		}
	}
	if peak["qwen"] != 2 || peak["claude"] != 2 {
		t.Errorf("agents at once per executor %v, want 2 each", peak)
	}
	for _, slot := range []string{"qwen#1", "qwen#2", "claude#1", "claude#2"} {
		if perClone[slot] != 2100 {
			t.Errorf("input tokens per clone %v, want 2100 each", perClone)
			break
		}
	}
	for _, key := range []string{acpClaudeKey, acpQwenKey} {
		if strings.Contains(out.String()+errOut.String(), key) {
			t.Errorf("key in muster's output")
		}
		clitest.NoSecret(t, key, &clitest.Recorder{}, nil, repo)
	}
}

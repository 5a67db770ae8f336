// Package agents_test runs a muster plan whose tasks are done by real
// Claude Code and real Codex clones, both pointed at the mock model server:
// their commits land on the run branch, usage is recorded per clone, and no
// artefact of the run holds their API keys.
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

const (
	claudeKey = "sk-ant-e2e-secret-claude-1111"
	codexKey  = "sk-e2e-secret-codex-2222"
)

func script() *mockllm.Script {
	write := func(name string, calls []mockllm.ToolCall) mockllm.Scenario {
		return mockllm.Scenario{Name: name, Steps: []mockllm.Step{
			{Text: "Writing.", Tools: calls, Usage: &mockllm.Usage{InputTokens: 1000, OutputTokens: 50}},
			{Text: "Done.", Usage: &mockllm.Usage{InputTokens: 1100, OutputTokens: 10}},
		}}
	}
	return &mockllm.Script{Scenarios: []mockllm.Scenario{
		write("e2e-claude", []mockllm.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "{{cwd}}/a.txt", "content": "from claude\n"}}}),
		write("e2e-codex", []mockllm.ToolCall{{Name: "apply_patch", Custom: "*** Begin Patch\n*** Add File: b.txt\n+from codex\n*** End Patch\n"}}),
	}}
}

const plan = `# Plan: agents-e2e

Two files, one per agent.

## [ ] a: Write a.txt
Owns: a.txt
Executor: claude
Review: none

Create a.txt. [scenario: e2e-claude]

## [ ] b: Write b.txt
Owns: b.txt
Executor: codex
Review: none

Create b.txt. [scenario: e2e-codex]
`

// runPlan commits muster.toml and plan.md into repo and runs the plan with
// muster run --json under runID; it returns the events on stdout and fails
// the test when muster exits non-zero.
func runPlan(t *testing.T, repo, toml, plan, runID string) (out, errOut bytes.Buffer) {
	t.Helper()
	for name, body := range map[string]string{"muster.toml": toml, "plan.md": plan} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "plan")
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	if code := cli.Execute(context.Background(), io, []string{"run", filepath.Join(repo, "plan.md"), "--repo", repo, "--json", "--run-id", runID}); code != 0 {
		t.Fatalf("muster run exited %d\nstderr:\n%s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	return out, errOut
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestPlanWithRealClaudeAndCodex(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real agent CLIs; skipped with -short")
	}
	claude := clitest.Binary(t, muster.ExecClaudeCode)
	codex := clitest.Binary(t, muster.ExecCodex)
	srv := mockllmtest.Start(t, script())
	t.Setenv("MUSTER_E2E_ANTHROPIC_KEY", claudeKey)
	t.Setenv("MUSTER_E2E_OPENAI_KEY", codexKey)
	gitconfig := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())

	repo := clitest.GitRepo(t)
	toml := `[run]
max_parallel = 2

[executors.claude]
kind = "claude-code"
clones = 1
model = "claude-sonnet-4-5"
base_url = "` + srv.URL + `"
api_key_env = "MUSTER_E2E_ANTHROPIC_KEY"
command = ["` + claude + `"]

[executors.codex]
kind = "codex"
clones = 1
model = "gpt-5.5"
base_url = "` + srv.URL + `/v1"
api_key_env = "MUSTER_E2E_OPENAI_KEY"
command = ["` + codex + `"]
`
	out, errOut := runPlan(t, repo, toml, plan, "e2e")

	branch := "muster/e2e"
	if got := git(t, repo, "show", branch+":a.txt"); got != "from claude" {
		t.Errorf("a.txt on %s = %q", branch, got)
	}
	if got := git(t, repo, "show", branch+":b.txt"); got != "from codex" {
		t.Errorf("b.txt on %s = %q", branch, got)
	}
	if n := git(t, repo, "rev-list", "--count", "main.."+branch); n != "2" {
		t.Errorf("%s commits on the run branch, want 2", n)
	}

	// Usage per clone, from the events muster printed: what counts (the
	// provider's, seen by muster's endpoint; the agents' claims beside it
	// do not count).
	perClone := map[string]int64{}
	for _, line := range strings.Split(out.String(), "\n") {
		var ev muster.Event
		if json.Unmarshal([]byte(line), &ev) != nil || !ev.Counted() {
			continue
		}
		perClone[muster.Slot(ev.Executor, ev.Clone)] += ev.InputTokens + ev.CacheReadTokens
	}
	if perClone["claude#1"] != 2100 || perClone["codex#1"] != 2100 {
		t.Errorf("input tokens per clone %v, want 2100 each", perClone)
	}

	// Claude Code's own logs of this run, read by muster usage, give the
	// same tokens muster recorded, and the same as ccusage's.
	claudeLogs := filepath.Join(repo, ".git", "muster", "runs", "e2e", "scratch")
	// A coder's home is its attempt's (home-*); a reviewer's is its own
	// invocation's (review-r*-*/home).
	homes, _ := filepath.Glob(filepath.Join(claudeLogs, "*", "home-*", ".claude"))
	more, _ := filepath.Glob(filepath.Join(claudeLogs, "*", "*", "home", ".claude"))
	homes = append(homes, more...)
	if len(homes) == 0 {
		t.Fatalf("no Claude Code home under %s", claudeLogs)
	}
	var usageOut, usageErr bytes.Buffer
	uio := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &usageOut, ErrOut: &usageErr}
	if code := cli.Execute(context.Background(), uio, []string{"usage", "claude", "daily", "--json", "--dir", strings.Join(homes, ",")}); code != 0 {
		t.Fatalf("muster usage exited %d: %s", code, usageErr.String())
	}
	var rep struct {
		Totals struct {
			Input     int64 `json:"input_tokens"`
			Output    int64 `json:"output_tokens"`
			CacheRead int64 `json:"cache_read_tokens"`
		} `json:"totals"`
	}
	if err := json.Unmarshal(usageOut.Bytes(), &rep); err != nil {
		t.Fatalf("usage json: %v\n%s", err, usageOut.String())
	}
	if got := rep.Totals.Input + rep.Totals.CacheRead; got != perClone["claude#1"] {
		t.Errorf("muster usage over Claude Code's logs: %d input tokens, the run recorded %d", got, perClone["claude#1"])
	}
	if cc := ccusage(t); cc != "" {
		cmd := exec.Command(cc, "claude", "daily", "--json", "--offline", "--timezone", "UTC")
		cmd.Env = []string{"HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR=" + strings.Join(homes, ","), "TZ=UTC"}
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("ccusage: %v", err)
		}
		var ccr struct {
			Totals struct {
				Input     int64 `json:"inputTokens"`
				Output    int64 `json:"outputTokens"`
				CacheRead int64 `json:"cacheReadTokens"`
			} `json:"totals"`
		}
		if err := json.Unmarshal(b, &ccr); err != nil {
			t.Fatalf("ccusage json: %v\n%s", err, b)
		}
		if ccr.Totals.Input != rep.Totals.Input || ccr.Totals.Output != rep.Totals.Output || ccr.Totals.CacheRead != rep.Totals.CacheRead {
			t.Errorf("ccusage totals %+v, muster usage %+v", ccr.Totals, rep.Totals)
		}
	}

	// No artefact holds a key: stdout, stderr, the repository with its git
	// directory (journal, receipt, worktrees, agent homes).
	for _, key := range []string{claudeKey, codexKey} {
		if strings.Contains(out.String()+errOut.String(), key) {
			t.Errorf("key in muster's output")
		}
		clitest.NoSecret(t, key, &clitest.Recorder{}, nil, repo)
	}
}

// ccusage finds ccusage 20.0.24's native binary ($CCUSAGE, or the copy
// .ci/run installs into .cache/ccusage); in CI it must be there.
func ccusage(t *testing.T) string {
	if p := os.Getenv("CCUSAGE"); p != "" {
		return p
	}
	p, _ := filepath.Abs("../../.cache/ccusage/node_modules/@ccusage/ccusage-linux-x64/bin/ccusage")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("ccusage not installed (CI must have it: npm install --prefix .cache/ccusage ccusage@20.0.24)")
	}
	t.Log("ccusage not installed: the comparison with it is left out")
	return ""
}

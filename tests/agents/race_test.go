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

// raceScript: one scenario for both candidates (they get the same
// prompt), with a call each CLI understands and one it refuses: Claude
// Code writes out.txt with its Write tool, Codex with apply_patch.
func raceScript() *mockllm.Script {
	return &mockllm.Script{Scenarios: []mockllm.Scenario{{Name: "race", Steps: []mockllm.Step{
		{Text: "Writing.", Tools: []mockllm.ToolCall{
			{Name: "Write", Input: map[string]any{"file_path": "{{cwd}}/out.txt", "content": "from claude\n"}},
			{Name: "apply_patch", Custom: "*** Begin Patch\n*** Add File: out.txt\n+from codex\n+and more\n*** End Patch\n"},
		}, Usage: &mockllm.Usage{InputTokens: 1000, OutputTokens: 50}},
		{Text: "Done.", Usage: &mockllm.Usage{InputTokens: 1100, OutputTokens: 10}},
	}}}}
}

// A real Claude Code and a real Codex race each other on one task: each
// writes its own change in its own clone, both pass, and the smallest
// change (Claude's one line against Codex's two; the judge, a Claude clone,
// gives no verdict record) lands alone, in one commit.
func TestRaceRealClaudeAgainstCodex(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real agent CLIs; skipped with -short")
	}
	claude := clitest.Binary(t, muster.ExecClaudeCode)
	codex := clitest.Binary(t, muster.ExecCodex)
	srv := mockllmtest.Start(t, raceScript())
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
	plan := "# Plan: race\n\n## [ ] r: Write out.txt\nOwns: out.txt\nRace: 2\nExecutor: claude, codex\nReview: none\n\nCreate out.txt. [scenario: race]\n"
	out, errOut := runPlan(t, repo, toml, plan, "race")
	var started, finished, won []muster.Event
	for _, line := range strings.Split(out.String(), "\n") {
		var ev muster.Event
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch ev.Type {
		case muster.EvRaceStarted:
			started = append(started, ev)
		case muster.EvCandidateFinished:
			finished = append(finished, ev)
		case muster.EvRaceWon:
			won = append(won, ev)
		}
	}
	if len(started) != 1 || len(started[0].Race) != 2 || started[0].Race[0].Executor != "claude" || started[0].Race[1].Executor != "codex" {
		t.Fatalf("RaceStarted %+v\n%s", started, errOut.String())
	}
	passed := 0
	for _, f := range finished {
		if f.Passed != nil && *f.Passed {
			passed++
		}
	}
	if passed != 2 || len(won) != 1 || won[0].Executor != "claude" {
		t.Fatalf("candidates %+v, winner %+v\n%s", finished, won, errOut.String())
	}
	if got := git(t, repo, "show", "muster/race:out.txt"); got != "from claude" {
		t.Errorf("out.txt on the run branch = %q", got)
	}
	if n := git(t, repo, "rev-list", "--count", "main..muster/race"); n != "1" {
		t.Errorf("%s commits on the run branch, want 1", n)
	}
	if refs := git(t, repo, "for-each-ref", "--format=%(refname)", "refs/muster/race/race/r/"); len(strings.Fields(refs)) != 2 {
		t.Errorf("race refs %q, want both candidates'", refs)
	}
}

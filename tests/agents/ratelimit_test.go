package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// TestRateLimitStormPacesTheCrew: four clones of one credential start at
// once and the mock model server answers the first requests of every task
// with 429 and a retry-after. The crew slows down (fewer agents at once
// after the storm, none before the retry-after), and the run still
// finishes with every task done, none charged for the rate limits: each
// task has Retries 0, so a charged rate limit would fail it.
func TestRateLimitStormPacesTheCrew(t *testing.T) {
	const tasks = 6
	var sc []mockllm.Scenario
	var plan strings.Builder
	plan.WriteString("# Plan: storm\n\n")
	for i := range tasks {
		name := fmt.Sprintf("storm-%d", i)
		sc = append(sc, mockllm.Scenario{Name: name, Steps: []mockllm.Step{
			{Status: 429, Error: "Rate limit exceeded", ErrorType: "rate_limit_error", RetryAfter: "1", Times: 2},
			{Tools: []mockllm.ToolCall{{Name: "write_file", Input: map[string]any{"path": fmt.Sprintf("f%d.txt", i), "content": "done\n"}}},
				Usage: &mockllm.Usage{InputTokens: 100, OutputTokens: 10}},
			{Text: "Done.", Usage: &mockllm.Usage{InputTokens: 120, OutputTokens: 5}},
		}})
		fmt.Fprintf(&plan, "## [ ] t%d: Write f%d.txt\nOwns: f%d.txt\nReview: none\n\nWrite it. [scenario: %s]\n\n", i, i, i, name)
	}
	srv := mockllmtest.Start(t, &mockllm.Script{Scenarios: sc})
	t.Setenv("MUSTER_STORM_KEY", "sk-storm-secret-0123456789")
	gitconfig := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	repo := clitest.GitRepo(t)
	toml := `[executors.api]
kind = "openai"
clones = 4
model = "gpt-mock"
base_url = "` + srv.URL + `/v1"
api_key_env = "MUSTER_STORM_KEY"
args = ["api=chat"]
`
	out, errOut := runPlan(t, repo, toml, plan.String(), "storm")
	var evs []muster.Event
	for _, line := range strings.Split(out.String(), "\n") {
		var ev muster.Event
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type != "" {
			evs = append(evs, ev)
		}
	}
	leases, maxBefore, maxAfter, limited := 0, 0, 0, 0
	var firstHit *muster.Event
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case muster.EvRateLimited:
			limited++
			if firstHit == nil {
				firstHit = ev
			}
		case muster.EvExecutorLeased:
			leases++
			if firstHit == nil {
				maxBefore = max(maxBefore, leases)
			} else {
				maxAfter = max(maxAfter, leases)
				if ev.Time.Before(firstHit.Time.Add(900_000_000)) {
					t.Errorf("%s started %s after the first rate limit, before its retry-after of 1s", ev.Task, ev.Time.Sub(firstHit.Time))
				}
			}
		case muster.EvExecutorRelease:
			leases--
		case muster.EvTaskFailed:
			if !ev.Retry || !strings.Contains(ev.Reason, "not charged") {
				t.Errorf("task %s failed: %s (retry %v)", ev.Task, ev.Reason, ev.Retry)
			}
		}
	}
	if limited < tasks {
		t.Errorf("%d rate limits, want at least %d (two a task were served)", limited, tasks)
	}
	if maxBefore != 4 || maxAfter >= maxBefore {
		t.Errorf("agents at once: %d before the storm, %d after; the crew did not slow down", maxBefore, maxAfter)
	}
	var st struct {
		Tasks []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"tasks"`
	}
	var sout bytes.Buffer
	if code := cli.Execute(context.Background(), &cmdutil.IOStreams{In: strings.NewReader(""), Out: &sout, ErrOut: &errOut},
		[]string{"status", "storm", "--repo", repo, "--json"}); code != 0 {
		t.Fatalf("status exited %d", code)
	}
	if err := json.Unmarshal(sout.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	for _, ts := range st.Tasks {
		if ts.State != "succeeded" {
			t.Errorf("task %s %s", ts.ID, ts.State)
		}
	}
	if n := git(t, repo, "rev-list", "--count", "main..muster/storm"); n != fmt.Sprint(tasks) {
		t.Errorf("%s commits on the run branch, want %d", n, tasks)
	}
	var rout bytes.Buffer
	if code := cli.Execute(context.Background(), &cmdutil.IOStreams{In: strings.NewReader(""), Out: &rout, ErrOut: &errOut},
		[]string{"report", "storm", "--repo", repo}); code != 0 {
		t.Fatalf("report exited %d", code)
	}
	if want := fmt.Sprintf("Rate limits on api: %d (muster paced the crew; no task was charged for them; longest retry-after 1s)", limited); !strings.Contains(rout.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, rout.String())
	}
}

package crash

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/journal"
)

// batchSetup is a plan of n independent tasks (disjoint Owns), four
// clones and a slow plan-wide gate, so that commits wait together in the
// integration queue and land in batches.
func batchSetup(t *testing.T, n int) (repo, plan, cfg string) {
	side := t.TempDir()
	agent := filepath.Join(side, "agent.sh")
	script := "#!/bin/sh\nmkdir -p out && echo \"$MUSTER_TASK_ID\" > \"out/$MUSTER_TASK_ID.txt\"\n"
	if err := os.WriteFile(agent, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(side, "muster.toml")
	toml := fmt.Sprintf("[run]\nmax_batch = 8\n\n[executors.sh]\nkind = \"command\"\nclones = 4\ncommand = [%q]\n\n[gates]\nslow = \"sleep 0.4\"\n", agent)
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("# Plan: batch\n\nEach task writes its own file.\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "## [ ] %s: Task %d\nOwns: out/%s.txt\n\nWrite it.\n\n", taskID(i), i, taskID(i))
	}
	plan = filepath.Join(side, "plan.md")
	if err := os.WriteFile(plan, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return newRepo(t, map[string]string{"README.md": "batch test\n"}), plan, cfg
}

// kill -9 in the middle of an integration batch of more than one
// commit (after its synced Integrating, and after the branch moved over
// the chain, before any Integrated), then resume: every task lands
// exactly once and verify holds.
func TestKilledMidBatchResumesEveryTaskOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds muster and runs it several times")
	}
	const n = 12
	for _, point := range []string{"batch-announced", "batch"} {
		t.Run(point, func(t *testing.T) {
			repo, plan, cfg := batchSetup(t, n)
			jpath := filepath.Join(repo, ".git", "muster", "runs", "batch", journal.FileName)
			r := runMuster(t, repo, []string{"MUSTER_CRASH_AT=" + point}, 0, "run", plan, "--config", cfg, "--run-id", "batch", "--plain")
			if !r.killed {
				t.Fatalf("not killed at %s: exit %d\n%s", point, r.code, r.stderr)
			}
			for i := 0; r.code != 0 && i < 4; i++ {
				r = runMuster(t, repo, nil, 0, "resume", "batch", "--plain")
			}
			if r.code != 0 {
				t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
			}
			events, err := journal.ReadFile(jpath)
			if err != nil {
				t.Fatal(err)
			}
			st, err := engine.Replay(events)
			if err != nil || st.RunState != muster.RunSucceeded {
				t.Fatalf("replay: %v %v", err, st)
			}
			trailers := git(t, repo, "log", "--format=%(trailers:key=Muster-Task,valueonly)", "main..muster/batch")
			count := map[string]int{}
			for _, l := range strings.Fields(trailers) {
				count[l]++
			}
			for i := 1; i <= n; i++ {
				if c := count[taskID(i)]; c != 1 {
					t.Errorf("task %s has %d commits on the run branch, want 1", taskID(i), c)
				}
			}
			if v := runMuster(t, repo, nil, 0, "verify", "batch"); v.code != 0 {
				t.Errorf("verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
			}
		})
	}
}

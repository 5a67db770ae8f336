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

// midBatch reports whether the journal ends inside a batch: its last
// Integrating names a chain of more than one commit, and a task of the
// chain has not succeeded after it.
func midBatch(t *testing.T, jpath string) bool {
	events, err := journal.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for i, e := range events {
		if e.Type == muster.EvIntegrating {
			last = i
		}
	}
	if last < 0 || len(events[last].Chain) < 2 {
		return false
	}
	open := map[muster.TaskID]bool{}
	for _, l := range events[last].Chain {
		open[l.Task] = true
	}
	for _, e := range events[last:] {
		if e.Type == muster.EvTaskSucceeded {
			delete(open, e.Task)
		}
	}
	return len(open) > 0
}

// kill -9 in the middle of an integration batch (after its synced
// Integrating, after the branch moved over the chain, after part of its
// Integrated events), then resume: every task lands exactly once and
// verify holds. Each process is killed at its second to fourth such moment
// until one falls inside a batch of more than one commit.
func TestKilledMidBatchResumesEveryTaskOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds muster and runs it several times")
	}
	const n = 12
	for _, point := range []string{"Integrating", "integrate", "Integrated"} {
		t.Run(point, func(t *testing.T) {
			repo, plan, cfg := batchSetup(t, n)
			jpath := filepath.Join(repo, ".git", "muster", "runs", "batch", journal.FileName)
			args := []string{"run", plan, "--config", cfg, "--run-id", "batch", "--plain"}
			hit := false
			r := result{code: -1}
			for i := 0; !hit && i < 8; i++ {
				at := fmt.Sprintf("%s:%d", point, 2+i%3)
				r = runMuster(t, repo, []string{"MUSTER_CRASH_AT=" + at}, 0, args...)
				args = []string{"resume", "batch", "--plain"}
				if r.code == 0 {
					break
				}
				hit = r.killed && midBatch(t, jpath)
			}
			if !hit {
				t.Fatalf("no kill fell inside an integration batch (last exit %d)", r.code)
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

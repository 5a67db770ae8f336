package crash

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster/internal/procid"
)

// daemonAgent, on its first invocation, starts a daemon that leaves its
// session (setsid) and its process group and keeps stdout open, records
// the daemon's pid, then works for long: muster is killed meanwhile.
// Later invocations do the work.
const daemonAgent = `#!/bin/sh
if [ ! -f "%[1]s" ]; then
  setsid sh -c 'echo $$ > "%[1]s.tmp" && mv "%[1]s.tmp" "%[1]s"; exec sleep 1000' &
  sleep 120
fi
mkdir -p out/d && echo done > out/d/result.txt
`

// killedWithDaemon runs a plan whose agent leaves a daemon outside its
// process group (the journal records the group) and kills muster with
// kill -9 once the daemon runs; it returns the repository, the plan, the
// config and the daemon's pid, alive.
func killedWithDaemon(t *testing.T) (repo, plan, cfg string, pid int) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	side := t.TempDir()
	pidFile := filepath.Join(side, "daemon.pid")
	agent := writeFile(t, filepath.Join(side, "agent.sh"), fmt.Sprintf(daemonAgent, pidFile))
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = writeFile(t, filepath.Join(side, "muster.toml"), fmt.Sprintf("[executors.sh]\nkind = \"command\"\ncommand = [%q]\n", agent))
	plan = writeFile(t, filepath.Join(side, "plan.md"), "# Plan: daemon\n\n## [ ] d: Starts a daemon\nOwns: out/d/\n\nWork.\n")
	repo = newRepo(t, map[string]string{"README.md": "daemon\n"})
	cmd := exec.Command(bin, "run", plan, "--config", cfg, "--run-id", "dm", "--plain")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "MUSTER_TEST_NO_LANDLOCK=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000 && pid == 0; i++ {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if pid == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if pid == 0 {
		t.Fatal("the agent's daemon never started")
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if !alive(pid) {
		t.Fatalf("the daemon (pid %d) is not running after muster was killed", pid)
	}
	return repo, plan, cfg, pid
}

// stoppedLeftovers checks that muster said it stopped the leftovers and
// that the daemon is gone.
func stoppedLeftovers(t *testing.T, r result, pid int) {
	t.Helper()
	if !strings.Contains(r.stderr, "processes that the agents of an interrupted muster left running") {
		t.Errorf("muster did not say it stopped the leftovers:\n%s", r.stderr)
	}
	for i := 0; i < 250 && alive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(pid) {
		t.Errorf("the daemon muster's agent left running (pid %d) survived", pid)
	}
}

// After kill -9 of muster, a daemon its agent left outside the agent's
// process group (which the journal records) is found by its mark and
// killed by the resume, which then finishes the run.
func TestResumeKillsTheDaemonThatOutlivedMuster(t *testing.T) {
	repo, _, _, pid := killedWithDaemon(t)
	r := runMuster(t, repo, nil, 0, "resume", "dm", "--plain")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	stoppedLeftovers(t, r, pid)
}

// A new run of the repository (not a resume) kills it too, before it
// resets the clones it reuses: the clone's lock names the killed muster,
// whose unconfined agents would otherwise go on writing in the clones of
// the new run (a late write of a killed run's agent failed a task of the
// next one on its Owns, TestClonesOfDeadRunsAreReused under load).
func TestNewRunKillsTheDaemonThatOutlivedMuster(t *testing.T) {
	repo, plan, cfg, pid := killedWithDaemon(t)
	r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--run-id", "next", "--plain")
	if r.code != 0 {
		t.Fatalf("next run: exit %d\n%s", r.code, r.stderr)
	}
	stoppedLeftovers(t, r, pid)
}

// A lock file's note is in the cache, which an unconfined agent can
// write: a note that names a muster still running (here a stand-in
// process, with a process marked as one of its agents) makes the next
// run kill nothing of it.
func TestNewRunSparesTheProcessesOfALiveHolder(t *testing.T) {
	repo, plan, cfg, _ := killedWithDaemon(t)
	holder := exec.Command("sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	start, err := procid.StartTime(holder.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	owner := fmt.Sprintf("%d.%d", holder.Process.Pid, start)
	agent := exec.Command("sleep", "60")
	agent.Env = append(os.Environ(), "MUSTER_PROC="+owner+".1")
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Process.Kill(); _ = agent.Wait() })
	locks := cachedClones(t, repo)
	if len(locks) == 0 {
		t.Fatal("no clone lock in the cache")
	}
	note := fmt.Sprintf("pid %d start %d run planted since 2026-12-03T00:00:00Z\n", holder.Process.Pid, start)
	for _, l := range locks {
		if err := os.WriteFile(l, []byte(note), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--run-id", "next", "--plain")
	if r.code != 0 {
		t.Fatalf("next run: exit %d\n%s", r.code, r.stderr)
	}
	if !alive(agent.Process.Pid) || !alive(holder.Process.Pid) {
		t.Error("the next run killed the processes of a holder that is still running")
	}
}

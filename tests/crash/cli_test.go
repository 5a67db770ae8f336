package crash

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster/journal"
)

func TestSecondProcessCannotDriveTheRun(t *testing.T) {
	repo, plan, cfg, _ := setup(t, 6)
	r := runMuster(t, repo, []string{"MUSTER_CRASH_AT=TaskSucceeded:2"}, 0, "run", plan, "--config", cfg, "--run-id", "sealed", "--plain")
	if !r.killed {
		t.Fatalf("run with a crash point: exit %d\n%s", r.code, r.stderr)
	}
	dir := filepath.Join(repo, ".git", "muster", "runs", "sealed")
	// Hold the run's lock as a live muster process would.
	// The killed process's lock may linger a moment (a child between
	// fork and exec shares it).
	j, _, err := journal.Open(filepath.Join(dir, journal.FileName), journal.Options{})
	for i := 0; errors.Is(err, journal.ErrLocked) && i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
		j, _, err = journal.Open(filepath.Join(dir, journal.FileName), journal.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r = runMuster(t, repo, nil, 0, "resume", "sealed")
	if r.code != 3 || !strings.Contains(r.stderr, "being driven by another muster process") {
		t.Errorf("resume of a held run: exit %d, want 3 and a clear message\n%s", r.code, r.stderr)
	}
	r = runMuster(t, repo, nil, 0, "verify", "sealed")
	if r.code != 3 {
		t.Errorf("verify of a held run: exit %d, want 3\n%s", r.code, r.stderr)
	}
	j.Close()
	if r := runMuster(t, repo, nil, 0, "resume", "sealed"); r.code != 0 {
		t.Errorf("resume once the lock is free: exit %d\n%s", r.code, r.stderr)
	}
}

func writeFile(t *testing.T, p, body string) string {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnapprovedAuthorityRefusesToStart(t *testing.T) {
	repo, _, cfg, pids := setup(t, 1)
	side := filepath.Dir(cfg)
	plan := writeFile(t, filepath.Join(side, "shell.md"), "# Plan: shell\n\n"+
		"## [ ] a: Needs a shell\nOwns: out/a/\nAuthority: shell\n\nDEPS:\n\n"+
		"## [ ] b: Reads\nOwns: out/b/\nAuthority: read\nAfter: a\n\nDEPS: a\n")
	r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--plain")
	if r.code != 2 {
		t.Fatalf("run with an unapproved authority: exit %d, want 2\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `shell.md:5: task a requests authority "shell"`) || !strings.Contains(r.stderr, "--approve shell") {
		t.Errorf("the refusal does not list what to approve:\n%s", r.stderr)
	}
	if _, err := os.Stat(pids); err == nil {
		t.Error("an agent ran although the run was refused")
	}
	// require_approval adds authorities; --approve grants them.
	strict := writeFile(t, filepath.Join(side, "strict.toml"), mustRead(t, cfg)+"\n")
	strictTOML := strings.Replace(mustRead(t, strict), "[run]\n", "[run]\nrequire_approval = [\"read\"]\n", 1)
	writeFile(t, strict, strictTOML)
	r = runMuster(t, repo, nil, 0, "run", plan, "--config", strict, "--approve", "shell", "--plain")
	if r.code != 2 || !strings.Contains(r.stderr, `task b requests authority "read"`) || strings.Contains(r.stderr, `task a requests`) {
		t.Fatalf("require_approval: exit %d\n%s", r.code, r.stderr)
	}
	// Approved, the run starts; b's agent writes files, which a read task
	// may not do: it fails with a boundary violation (exit 1), not a refusal.
	r = runMuster(t, repo, nil, 0, "run", plan, "--config", strict, "--approve", "shell", "--approve", "read", "--plain")
	if r.code != 1 || !strings.Contains(r.stderr, "changed paths with read authority: out/b/") {
		t.Fatalf("approved run: exit %d, want 1 with b's read-authority violation\n%s", r.code, r.stderr)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// slowAgent sleeps on its first invocation (recording its pid), as an
// agent still at work when muster is killed; later invocations work.
const slowAgent = `#!/bin/sh
if [ ! -f "%[1]s" ]; then
  echo $$ > "%[1]s"
  sleep 120
fi
mkdir -p out/slow && echo done > out/slow/result.txt
`

// orphanedAgent runs a one-task plan whose agent is still at work when
// muster is killed (kill -9 right after AgentStarted) and returns the
// repository and the agent's pid, running.
func orphanedAgent(t *testing.T) (repo string, pid int) {
	t.Helper()
	side := t.TempDir()
	first := filepath.Join(side, "first.pid")
	agent := writeFile(t, filepath.Join(side, "agent.sh"), fmt.Sprintf(slowAgent, first))
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, filepath.Join(side, "muster.toml"), fmt.Sprintf("[executors.sh]\nkind = \"command\"\ncommand = [%q]\n", agent))
	plan := writeFile(t, filepath.Join(side, "plan.md"), "# Plan: slow\n\n## [ ] slow: Takes long\nOwns: out/slow/\n\nWork.\n")
	repo = newRepo(t, map[string]string{"README.md": "slow\n"})
	r := runMuster(t, repo, []string{"MUSTER_CRASH_AT=AgentStarted:1"}, 0, "run", plan, "--config", cfg, "--run-id", "slow", "--plain")
	if !r.killed {
		t.Fatalf("exit %d, want killed\n%s", r.code, r.stderr)
	}
	for i := 0; i < 200 && pid == 0; i++ { // the agent may not have written it yet
		if b, err := os.ReadFile(first); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if pid == 0 {
			time.Sleep(25 * time.Millisecond)
		}
	}
	if pid == 0 || !alive(pid) {
		t.Fatalf("the first agent (pid %d) is not running after muster was killed", pid)
	}
	return repo, pid
}

func TestResumeKillsTheAgentThatOutlivedMuster(t *testing.T) {
	repo, pid := orphanedAgent(t)
	if r := runMuster(t, repo, nil, 0, "resume", "slow", "--plain"); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if alive(pid) {
		t.Errorf("the agent muster left running (pid %d) survived the resume", pid)
	}
}

// A journaled agent pid whose start time no longer matches (here: the
// journal edited, as after a reboot or a reused pid) is not killed by the
// resume, which records a warning instead.
func TestResumeLeavesAReusedPIDAlone(t *testing.T) {
	repo, pid := orphanedAgent(t)
	defer syscall.Kill(-pid, syscall.SIGKILL)
	jpath := filepath.Join(repo, ".git", "muster", "runs", "slow", "journal.jsonl")
	b, err := os.ReadFile(jpath)
	if err != nil {
		t.Fatal(err)
	}
	edited := regexp.MustCompile(`"pid_start":[0-9]+`).ReplaceAll(b, []byte(`"pid_start":1`))
	if bytes.Equal(edited, b) {
		t.Fatalf("no pid_start in the journal:\n%s", b)
	}
	if err := os.WriteFile(jpath, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runMuster(t, repo, nil, 0, "resume", "slow", "--plain"); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if !alive(pid) {
		t.Errorf("the resume killed pid %d, which the journal says is another process", pid)
	}
	if j := mustRead(t, jpath); !strings.Contains(j, "is another process now") {
		t.Errorf("no warning about the process left alone in the journal")
	}
}

func TestInterruptedRunSealsAReceipt(t *testing.T) {
	side := t.TempDir()
	agent := writeFile(t, filepath.Join(side, "agent.sh"), "#!/bin/sh\nsleep 120\n")
	if err := os.Chmod(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, filepath.Join(side, "muster.toml"), fmt.Sprintf("[run]\ngrace = \"1s\"\n\n[executors.sh]\nkind = \"command\"\ncommand = [%q]\n", agent))
	plan := writeFile(t, filepath.Join(side, "plan.md"), "# Plan: int\n\n## [ ] slow: Takes long\nOwns: out/slow/\n\nWork.\n")
	repo := newRepo(t, map[string]string{"README.md": "int\n"})
	cmd := exec.Command(bin, "run", plan, "--config", cfg, "--run-id", "int", "--plain")
	cmd.Dir = repo
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	jpath := filepath.Join(repo, ".git", "muster", "runs", "int", journal.FileName)
	for i := 0; ; i++ {
		b, _ := os.ReadFile(jpath)
		if strings.Contains(string(b), `"AgentStarted"`) {
			break
		}
		if i > 2000 {
			cmd.Process.Kill()
			t.Fatal("the agent never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("interrupted run: %v, want exit 130", err)
	}
	rec := mustRead(t, filepath.Join(repo, ".git", "muster", "runs", "int", "receipt.json"))
	if !strings.Contains(rec, `"state": "interrupted"`) || !strings.Contains(rec, `"reason": "interrupted"`) {
		t.Errorf("receipt of an interrupted run:\n%s", rec)
	}
	if r := runMuster(t, repo, nil, 0, "verify", "int"); r.code != 0 {
		t.Errorf("verify: exit %d\n%s", r.code, r.stdout)
	}
}

func TestKilledAfterTheEndResumeSealsAndCleansUp(t *testing.T) {
	repo, plan, cfg, _ := setup(t, 4)
	r := runMuster(t, repo, []string{"MUSTER_CRASH_AT=RunFinished:1"}, 0, "run", plan, "--config", cfg, "--run-id", "end", "--plain")
	if !r.killed {
		t.Fatalf("exit %d, want killed\n%s", r.code, r.stderr)
	}
	if r := runMuster(t, repo, nil, 0, "verify", "end"); r.code != 1 || !strings.Contains(r.stdout, "none sealed") {
		t.Errorf("verify before the resume: exit %d\n%s", r.code, r.stdout)
	}
	if r := runMuster(t, repo, nil, 0, "resume", "end", "--plain"); r.code != 0 || !strings.Contains(r.stderr, "nothing to do") {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	if r := runMuster(t, repo, nil, 0, "verify", "end"); r.code != 0 {
		t.Errorf("verify after the resume: exit %d\n%s", r.code, r.stdout)
	}
	if wts := strings.Count(git(t, repo, "worktree", "list", "--porcelain"), "worktree "); wts != 1 {
		t.Errorf("%d worktrees left", wts)
	}
}

func TestClonesOfDeadRunsAreReused(t *testing.T) {
	repo, plan, cfg, _ := setup(t, 4)
	r := runMuster(t, repo, []string{"MUSTER_CRASH_AT=TaskSucceeded:1"}, 0, "run", plan, "--config", cfg, "--run-id", "dead", "--plain")
	if !r.killed {
		t.Fatalf("exit %d, want killed\n%s", r.code, r.stderr)
	}
	if wts := strings.Count(git(t, repo, "worktree", "list", "--porcelain"), "worktree "); wts != 1 {
		t.Errorf("%d worktrees in the repository: clones belong in muster's cache", wts)
	}
	clones := cachedClones(t, repo)
	if len(clones) == 0 {
		t.Fatal("the killed run left no clone in the cache: nothing to test")
	}
	if r := runMuster(t, repo, nil, 0, "run", plan, "--config", cfg, "--run-id", "next", "--plain"); r.code != 0 {
		t.Fatalf("next run: exit %d\n%s", r.code, r.stderr)
	}
	if after := cachedClones(t, repo); len(after) != len(clones) {
		t.Errorf("clones after the next run %v, want the dead run's %v reused", after, clones)
	}
	// The dead run itself stays resumable.
	if r := runMuster(t, repo, nil, 0, "resume", "dead", "--plain"); r.code != 0 {
		t.Errorf("resume of the dead run: exit %d\n%s", r.code, r.stderr)
	}
}

// cachedClones lists the clones of repo in muster's cache.
func cachedClones(t *testing.T, repo string) []string {
	t.Helper()
	common := git(t, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	keys, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "muster", "repos", "*", "repo"))
	for _, k := range keys {
		if b, err := os.ReadFile(k); err == nil && strings.TrimSpace(string(b)) == strings.TrimSpace(common) {
			locks, _ := filepath.Glob(filepath.Join(filepath.Dir(k), "clones", "*.lock"))
			return locks
		}
	}
	return nil
}

package tmux_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCtrlCThroughTee runs `muster run plan.md 2>&1 | tee run.log` in a
// terminal and presses Ctrl-C while two agents work. The terminal's
// SIGINT reaches tee too, which dies; muster then writes to a dead pipe.
// It must not die of SIGPIPE (141): it stops cleanly (130), its agents
// are killed, and the journal ends with RunInterrupted (issue 13, item 1).
func TestCtrlCThroughTee(t *testing.T) {
	needTmux(t)
	bin := buildMuster(t)
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	for _, d := range []string{repo, filepath.Join(root, "home"), filepath.Join(root, "cache")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The agent works for long (until stopped).
	agent := "#!/bin/sh\necho working on $MUSTER_TASK_ID\nexec sleep 600\n"
	plan := "# Plan: tee\n\n## [ ] a: A\nOwns: a.txt\nReview: none\n\n## [ ] b: B\nOwns: b.txt\nReview: none\n"
	for name, body := range map[string]string{"agent.sh": agent, "plan.md": plan} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitEnv := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = repo, gitEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// Ctrl-C without the live view (stderr is a pipe) is the terminal's
	// SIGINT to the whole foreground group. bash, the pane's only shell,
	// traps it (its children get the default action) so that it lives on
	// to print muster's status after the pipeline.
	script := fmt.Sprintf(`trap "echo caught" INT; cd %s && HOME=%s XDG_CACHE_HOME=%s GIT_CONFIG_GLOBAL=/dev/null %s run --run-id tee --crew sh=command:2:./agent.sh plan.md 2>&1 | tee %s; echo "muster-status=${PIPESTATUS[0]}"; sleep 600`,
		repo, filepath.Join(root, "home"), filepath.Join(root, "cache"), bin, filepath.Join(root, "run.log"))
	s := startBash(t, "tee", script)
	journal := filepath.Join(repo, ".git", "muster", "runs", "tee", "journal.jsonl")

	// Both agents at work: the journal has their processes.
	var pids []int
	deadline := time.Now().Add(2 * time.Minute)
	for len(pids) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the agents never started; screen:\n%s", s.screen())
		}
		time.Sleep(50 * time.Millisecond)
		pids = nil
		for _, e := range readJournal(t, journal) {
			if e.Type == "AgentStarted" && e.PID > 0 {
				pids = append(pids, e.PID)
			}
		}
	}
	s.keys("C-c")
	scr := s.waitUntil("muster's exit status", func(scr string) bool { return strings.Contains(scr, "muster-status=") })
	m := regexp.MustCompile(`muster-status=(\d+)`).FindStringSubmatch(scr)
	if m == nil || m[1] != "130" {
		t.Errorf("muster exited %v, want 130 (141 is death by SIGPIPE); screen:\n%s", m, scr)
	}

	// Its agents are gone (muster waits for them before it exits).
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("an agent (pid %d) still runs after muster exited", pid)
		}
	}
	// The journal says the run was interrupted (resumable).
	evs := readJournal(t, journal)
	if last := evs[len(evs)-1].Type; last != "RunInterrupted" {
		t.Errorf("the journal's last event is %q, want RunInterrupted", last)
	}
}

type jevent struct {
	Type string `json:"type"`
	PID  int    `json:"pid"`
}

// readJournal reads the events of a journal that may be half written.
func readJournal(t *testing.T, path string) []jevent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []jevent
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e jevent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// startBash runs a bash script as the only process of a new tmux
// session's pane (start wraps its command in sh, which a terminal SIGINT
// would end).
func startBash(t *testing.T, name, script string) *session {
	t.Helper()
	dir, err := os.MkdirTemp("", "mtx")
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, socket: filepath.Join(dir, "s"), name: name}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", s.socket, "kill-server").Run()
		_ = os.RemoveAll(dir)
	})
	file := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(file, []byte(script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", "env -u CI TERM=xterm-256color bash "+file)
	return s
}

package watch

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helperEnv names the journal when this test binary runs as `muster
// watch` inside tmux (see TestMain).
const helperEnv = "MUSTER_WATCH_HELPER_JOURNAL"

func TestMain(m *testing.M) {
	if j := os.Getenv(helperEnv); j != "" {
		cmd := NewCmd(func(string, string) (string, error) { return j, nil })
		cmd.SetArgs([]string{})
		if err := cmd.Execute(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tmux drives a private tmux server (its own socket in a temp dir).
type tmux struct {
	t      *testing.T
	socket string
}

func newTmux(t *testing.T) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux not found (CI must have it: apt-get install -y tmux)")
		}
		t.Skip("tmux not found: apt-get install -y tmux")
	}
	dir, err := os.MkdirTemp("", "mtx") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	x := &tmux{t: t, socket: filepath.Join(dir, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", x.socket, "kill-server").Run()
		_ = os.RemoveAll(dir)
	})
	return x
}

func (x *tmux) run(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", x.socket}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// waitFor polls the pane until it shows every string, or fails after a
// generous deadline (a slow machine only makes it wait longer).
func (x *tmux) waitFor(what ...string) string {
	x.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var screen string
	for time.Now().Before(deadline) {
		screen = x.run("capture-pane", "-p", "-t", "views")
		ok := true
		for _, w := range what {
			ok = ok && strings.Contains(screen, w)
		}
		if ok {
			return screen
		}
		time.Sleep(100 * time.Millisecond)
	}
	x.t.Fatalf("pane never showed %q; last screen:\n%s", what, screen)
	return ""
}

// TestWatchInTmux runs `muster watch` (this test binary in helper mode)
// in a real terminal, while the test appends a run's events to the
// journal, as a person would see it: lanes and the [n/N] header appear
// and move, j selects a task, q leaves while the run goes on.
func TestWatchInTmux(t *testing.T) {
	x := newTmux(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	lines := bytes.SplitAfter(sample(t), []byte("\n"))
	// The first 30 events: two tasks under way.
	if err := os.WriteFile(path, bytes.Join(lines[:30], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("env -u CI %s=%s %s; echo watch-exited=$?; sleep 600", helperEnv, path, exe)
	x.run("new-session", "-d", "-s", "views", "-x", "160", "-y", "48", "sh", "-c", script)

	first := x.waitFor("claude#1", "codex#1", "gemini#1", "[1/8]", "api ", "store ")
	t.Logf("first screen:\n%s", first)

	// The run goes on: more events arrive.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Join(lines[30:100], nil)); err != nil {
		t.Fatal(err)
	}
	x.waitFor("[4/8]", "metrics")

	// j j selects the third task and shows its details.
	x.run("send-keys", "-t", "views", "j", "j")
	x.waitFor("store: Add the version store", "internal/store/version.go")

	// q leaves the view; the run is not stopped (more lines still come).
	x.run("send-keys", "-t", "views", "q")
	x.waitFor("watch-exited=0")
	if _, err := f.Write(bytes.Join(lines[100:], nil)); err != nil {
		t.Fatal(err)
	}
}

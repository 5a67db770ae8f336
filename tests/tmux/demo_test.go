// Package tmux_test drives the real muster binary in a real terminal
// (tmux), as a person would: it types keys with send-keys and reads the
// screen with capture-pane.
package tmux_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// session is one tmux session on a private server (its own socket).
type session struct {
	t      *testing.T
	socket string
	name   string
}

func needTmux(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds muster and runs the demo in tmux; skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux not found (CI must have it: apt-get install -y tmux)")
		}
		t.Skip("tmux not found: apt-get install -y tmux")
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// buildMuster builds the muster binary once for the package's tests.
func buildMuster(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "muster-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "muster")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/muster-run/muster/cmd/muster").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	// muster's clones go to a cache of the tests' own, never the user's.
	cache, err := os.MkdirTemp("", "muster-tmux-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	os.RemoveAll(cache)
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// start runs a shell command in a new 160x48 tmux session. CI is unset
// inside, so muster sees an interactive terminal.
func start(t *testing.T, name, command string) *session {
	t.Helper()
	dir, err := os.MkdirTemp("", "mtx") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, socket: filepath.Join(dir, "s"), name: name}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", s.socket, "kill-server").Run()
		_ = os.RemoveAll(dir)
	})
	script := fmt.Sprintf("env -u CI TERM=xterm-256color %s; echo %s-exited=$?; sleep 600", command, name)
	s.tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "48", "sh", "-c", script)
	return s
}

func (s *session) tmux(args ...string) string {
	s.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *session) screen() string { return s.tmux("capture-pane", "-p", "-t", s.name) }

// history is the screen and what scrolled off it, wrapped lines joined.
func (s *session) history() string {
	return s.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", s.name)
}

func (s *session) keys(keys ...string) {
	s.tmux(append([]string{"send-keys", "-t", s.name}, keys...)...)
}

// waitUntil polls the screen until ok accepts it, or fails after a
// generous deadline (a slow machine only makes it wait longer).
func (s *session) waitUntil(what string, ok func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var scr string
	for time.Now().Before(deadline) {
		if scr = s.screen(); ok(scr) {
			return scr
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("the screen never showed %s; last screen:\n%s", what, scr)
	return ""
}

var header = regexp.MustCompile(`(?m)^\[(\d+)/(\d+)\]  running \d+`)

// done returns the [done/total] count of a live-view screen, or -1.
func done(screen string) int {
	m := header.FindStringSubmatch(screen)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func liveView(scr string) bool { return strings.Contains(scr, "── lanes") && done(scr) >= 0 }

// waitForView waits for the live view; the demo must show it on a terminal.
func waitForView(s *session) string {
	s.t.Helper()
	scr := s.waitUntil("the live view", func(scr string) bool {
		return liveView(scr) || strings.Contains(scr, s.name+"-exited=")
	})
	if !liveView(scr) {
		s.t.Fatalf("muster demo ran without the live view on a terminal:\n%s", scr)
	}
	return scr
}

// TestDemoLiveView runs muster demo in a terminal: the lanes of the
// simulated crew and the [n/N] header appear and move, j selects a task,
// and q leaves the view while the run goes on to succeed.
func TestDemoLiveView(t *testing.T) {
	needTmux(t)
	bin := buildMuster(t)
	repo := filepath.Join(t.TempDir(), "demo")
	s := start(t, "demo", fmt.Sprintf("%s demo --dir %s --speed 0.7", bin, repo))

	first := waitForView(s)
	for _, lane := range []string{"alpha#1", "alpha#2", "beta#1", "beta#2"} {
		if !strings.Contains(first, lane) {
			t.Errorf("no lane %s on the first screen:\n%s", lane, first)
		}
	}
	n0 := done(first)
	// The lanes move: more tasks get done while we watch.
	moved := s.waitUntil("the [n/N] count moving", func(scr string) bool {
		return liveView(scr) && done(scr) > n0 && done(scr) >= 3
	})
	t.Logf("live view:\n%s", moved)
	if !regexp.MustCompile(`(?m)^(alpha|beta)#\d +\S+ +(agent|gates|review|integrating|reviewing)`).MatchString(moved) &&
		!strings.Contains(moved, "idle") {
		t.Errorf("lanes show neither work nor idle clones:\n%s", moved)
	}
	// j selects the second task; its details show beside the list.
	s.keys("j")
	s.waitUntil("a selected task's details", func(scr string) bool {
		return strings.Contains(scr, "› ") && strings.Contains(scr, "latest agent output:")
	})
	// q leaves the view; the run is not stopped: the demo finishes.
	s.keys("q")
	end := s.waitUntil("the demo's end", func(scr string) bool { return strings.Contains(scr, "demo-exited=") })
	if !strings.Contains(end, "demo-exited=0") || strings.Contains(end, "interrupted") {
		t.Errorf("after q the run should finish and the demo exit 0:\n%s", end)
	}
	// q said so, once: the run goes on, how to stop and watch it.
	if all := s.history(); strings.Count(all, "left the live view: run ") != 1 || !strings.Contains(all, "goes on below in plain lines; Ctrl-C stops it, muster watch") {
		t.Errorf("q should leave one line saying the run goes on:\n%s", all)
	}
}

// TestDemoCtrlCStopsRun checks that ctrl+c in the live view stops the run
// as it does without the view: muster exits 130, the run resumable.
func TestDemoCtrlCStopsRun(t *testing.T) {
	needTmux(t)
	bin := buildMuster(t)
	repo := filepath.Join(t.TempDir(), "demo")
	s := start(t, "demo", fmt.Sprintf("%s demo --dir %s --speed 0.7", bin, repo))
	waitForView(s)
	s.keys("C-c")
	end := s.waitUntil("the demo's end", func(scr string) bool { return strings.Contains(scr, "demo-exited=") })
	if !strings.Contains(end, "demo-exited=130") {
		t.Errorf("ctrl+c should stop the run (exit 130):\n%s", end)
	}
}

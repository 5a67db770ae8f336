package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func TestRunLinesAndExit(t *testing.T) {
	var lines, errs []string
	res, err := Run(context.Background(), Spec{
		Argv:     []string{"sh", "-c", "echo one; echo two; echo oops >&2; exit 3"},
		OnLine:   func(l string) { lines = append(lines, l) },
		OnStderr: func(l string) { errs = append(errs, l) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || strings.Join(lines, ",") != "one,two" || strings.Join(errs, ",") != "oops" {
		t.Fatalf("res=%+v lines=%v errs=%v", res, lines, errs)
	}
}

func TestRunStdin(t *testing.T) {
	var lines []string
	_, err := Run(context.Background(), Spec{
		Argv:   []string{"cat"},
		Stdin:  strings.NewReader("hello\nworld"),
		OnLine: func(l string) { lines = append(lines, l) },
	})
	if err != nil || strings.Join(lines, "|") != "hello|world" {
		t.Fatalf("err=%v lines=%v", err, lines)
	}
}

func TestTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := dir + "/child"
	// The child ignores SIGTERM; only SIGKILL of the group ends it.
	script := "trap '' TERM; (trap '' TERM; sleep 60) & echo $! > " + pidFile + "; wait"
	res, err := Run(context.Background(), Spec{
		Argv:    []string{"sh", "-c", script},
		Timeout: 200 * time.Millisecond,
		Grace:   100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "timeout" {
		t.Fatalf("stopped=%q", res.Stopped)
	}
	b, _ := os.ReadFile(pidFile)
	pid := 0
	for _, c := range strings.TrimSpace(string(b)) {
		pid = pid*10 + int(c-'0')
	}
	deadline := time.Now().Add(5 * time.Second)
	for Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if Alive(pid) {
		t.Fatalf("grandchild %d survived", pid)
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	res, err := Run(ctx, Spec{Argv: []string{"sleep", "30"}, Grace: time.Second})
	if err != nil || res.Stopped != "cancelled" || res.ExitCode == 0 {
		t.Fatalf("res=%+v err=%v", res, err)
	}
}

func TestStall(t *testing.T) {
	res, err := Run(context.Background(), Spec{
		Argv:  []string{"sh", "-c", "echo a; sleep 30"},
		Stall: 200 * time.Millisecond,
		Grace: 100 * time.Millisecond,
	})
	if err != nil || res.Stopped != "stall" {
		t.Fatalf("res=%+v err=%v", res, err)
	}
}

func TestStartError(t *testing.T) {
	if _, err := Run(context.Background(), Spec{Argv: []string{"/nonexistent/prog"}}); err == nil {
		t.Fatal("want start error")
	}
}

func TestEnvironScrubs(t *testing.T) {
	t.Setenv("MY_API_KEY", "sk-secret")
	t.Setenv("GH_TOKEN", "x")
	t.Setenv("DB_PASSWORD_FILE", "x")
	t.Setenv("PLAIN", "ok")
	env := strings.Join(Environ("GH_TOKEN"), "\n")
	if strings.Contains(env, "MY_API_KEY") || strings.Contains(env, "DB_PASSWORD") {
		t.Fatal("secret leaked")
	}
	if !strings.Contains(env, "GH_TOKEN=x") || !strings.Contains(env, "PLAIN=ok") {
		t.Fatal("allowed or plain var missing")
	}
}

// An executor's key variable is scrubbed whatever its name, unless the
// caller (that executor) allows it.
func TestEnvironScrubsKeyVars(t *testing.T) {
	t.Setenv("ALPHA", "a-key")
	t.Setenv("PLAIN", "ok")
	SetKeyVars("ALPHA")
	t.Cleanup(func() { SetKeyVars() })
	if env := strings.Join(Environ(), "\n"); strings.Contains(env, "ALPHA") || !strings.Contains(env, "PLAIN=ok") {
		t.Fatalf("env:\n%s", env)
	}
	if env := strings.Join(Environ("ALPHA"), "\n"); !strings.Contains(env, "ALPHA=a-key") {
		t.Fatal("the executor's own key is missing")
	}
}

// A process that exits leaving a child that holds its output open has
// finished: Run returns with its exit status, and the leftover is killed
// (it would otherwise keep Run waiting for a minute).
func TestExitWithLeftoverChild(t *testing.T) {
	t.Parallel()
	pidFile := t.TempDir() + "/child"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lines []string
	res, err := Run(ctx, Spec{
		Argv:   []string{"sh", "-c", "sleep 60 & echo $! > " + pidFile + "; echo done; exit 3"},
		Stdin:  strings.NewReader(strings.Repeat("prompt\n", 50000)),
		Grace:  100 * time.Millisecond,
		OnLine: func(l string) { lines = append(lines, l) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stopped != "" || res.ExitCode != 3 {
		t.Fatalf("stopped=%q exit=%d, want a plain exit 3", res.Stopped, res.ExitCode)
	}
	if len(lines) != 1 || lines[0] != "done" {
		t.Fatalf("lines = %q", lines)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for running(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if running(pid) {
		t.Fatalf("leftover child %d survived", pid)
	}
}

// running reports whether pid is a live process (a zombie is not).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Alive(pid)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// A handler that panics on a reader goroutine does not crash muster: the
// process group is stopped and Run returns the panic (with its stack) to
// the caller, whose goroutine can stop the run cleanly.
func TestHandlerPanicStopsTheGroupAndIsReturned(t *testing.T) {
	res, err := Run(context.Background(), Spec{
		Argv:   []string{"sh", "-c", "echo boom; exec sleep 300"},
		Grace:  100 * time.Millisecond,
		OnLine: func(string) { panic("parser bug") },
	})
	var pe *muster.PanicError
	if !errors.As(err, &pe) || pe.Value != "parser bug" || !strings.Contains(pe.Stack, "TestHandlerPanicStopsTheGroupAndIsReturned") {
		t.Fatalf("err %v, want the handler's panic with its stack", err)
	}
	if res.Stopped != "panic" {
		t.Errorf("stopped %q, want panic", res.Stopped)
	}
}

// TestLauncher: with a launcher the program runs through it, its path
// resolved first (a relative one against Dir), and a missing program is
// still a start error, as without one.
func TestLauncher(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/prog", []byte("#!/bin/sh\necho \"prog $1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	launcher := []string{"sh", "-c", `echo "launched $1"; exec "$@"`, "launcher"}
	var lines []string
	res, err := Run(context.Background(), Spec{Argv: []string{"./prog", "arg"}, Dir: dir, Launcher: launcher,
		OnLine: func(l string) { lines = append(lines, l) }})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if want := "launched " + dir + "/prog,prog arg"; strings.Join(lines, ",") != want {
		t.Errorf("lines %q, want %q", lines, want)
	}
	for _, missing := range []string{"./nope", "no-such-program-muster"} {
		if _, err := Run(context.Background(), Spec{Argv: []string{missing}, Dir: dir, Launcher: launcher}); err == nil {
			t.Errorf("%s: no start error", missing)
		}
	}
}

// TestTimeoutGivesTheGroupItsGrace: past the timeout the whole group
// gets SIGTERM and the grace to act on it, not only the leader: a child
// still cleaning up when the leader has exited is not killed at once.
func TestTimeoutGivesTheGroupItsGrace(t *testing.T) {
	done := filepath.Join(t.TempDir(), "child-done")
	script := fmt.Sprintf(`sh -c 'trap "sleep 0.3; echo ok > %s; exit 0" TERM; echo ready; sleep 60 & wait' &
		trap "exit 0" TERM; sleep 60 & wait`, done)
	res, err := Run(context.Background(), Spec{
		Argv:    []string{"sh", "-c", script},
		Timeout: 300 * time.Millisecond,
		Grace:   10 * time.Second,
	})
	if err != nil || res.Stopped != "timeout" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if _, err := os.Stat(done); err != nil {
		t.Fatalf("the child was killed before its SIGTERM handler finished: %v", err)
	}
}

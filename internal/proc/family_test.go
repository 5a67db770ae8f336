package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func needProc(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
}

// waitPid reads the pid a test's daemon wrote to file.
func waitPid(t *testing.T, file string) int {
	t.Helper()
	for i := 0; i < 500; i++ {
		if b, err := os.ReadFile(file); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// gone reports whether pid has exited (a zombie counts as gone), waiting
// up to a few seconds for it.
func gone(pid int) bool {
	for i := 0; i < 300; i++ {
		p, ok := readStat(pid)
		if !ok || p.zombie {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func kill(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }

// The attack: a daemon that left the session with setsid and
// holds the agent's stdout, `sleep infinity` style. The agent exits; Run
// must neither wait for the daemon nor leave it running.
func TestSetsidDaemonHoldingStdoutIsStopped(t *testing.T) {
	needProc(t)
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	res, err := Run(context.Background(), Spec{
		Argv:  []string{"sh", "-c", fmt.Sprintf(`setsid sh -c 'echo $$ > %s; exec sleep 1000' & sleep 0.2; echo bye`, pidFile)},
		Grace: 200 * time.Millisecond,
	})
	if err != nil || res.ExitCode != 0 || res.Stopped != "" {
		t.Fatalf("res %+v err %v", res, err)
	}
	pid := waitPid(t, pidFile)
	if !gone(pid) {
		kill(pid)
		t.Fatalf("the setsid daemon (pid %d) outlived the invocation", pid)
	}
}

// A daemon with its output redirected does not hold the pipes, but must
// not outlive the invocation either.
func TestRedirectedDaemonDoesNotOutliveInvocation(t *testing.T) {
	needProc(t)
	pidFile := filepath.Join(t.TempDir(), "daemon.pid")
	_, err := Run(context.Background(), Spec{
		Argv: []string{"sh", "-c", fmt.Sprintf(`setsid sh -c 'echo $$ > %s; exec sleep 1000' </dev/null >/dev/null 2>&1 & sleep 0.2`, pidFile)},
	})
	if err != nil {
		t.Fatal(err)
	}
	pid := waitPid(t, pidFile)
	if !gone(pid) {
		kill(pid)
		t.Fatalf("the redirected daemon (pid %d) outlived the invocation", pid)
	}
}

// A timeout (and a cancellation) stops a leader whose setsid daemon
// holds stdout, and the daemon with it.
func TestTimeoutAndCancelStopSetsidDaemon(t *testing.T) {
	needProc(t)
	for _, why := range []string{"timeout", "cancelled"} {
		t.Run(why, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "daemon.pid")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			spec := Spec{
				Argv: []string{"sh", "-c", fmt.Sprintf(`setsid sh -c 'echo $$ > %[1]s; exec sleep 1000' &
					while [ ! -s %[1]s ]; do sleep 0.01; done; echo started; exec sleep 1000`, pidFile)},
				Grace: 200 * time.Millisecond,
			}
			if why == "timeout" {
				spec.Timeout = 300 * time.Millisecond
			} else {
				spec.OnLine = func(string) { cancel() }
			}
			res, err := Run(ctx, spec)
			if err != nil || res.Stopped != why {
				t.Fatalf("res %+v err %v", res, err)
			}
			pid := waitPid(t, pidFile)
			if !gone(pid) {
				kill(pid)
				t.Fatalf("the daemon (pid %d) survived the %s", pid, why)
			}
		})
	}
}

// The timeout also applies after the leader exited, while the family
// still holds the pipes (a child that ignores SIGTERM, under a grace
// longer than the timeout).
func TestTimeoutAppliesAfterLeaderExit(t *testing.T) {
	needProc(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	res, err := Run(context.Background(), Spec{
		Argv:    []string{"sh", "-c", fmt.Sprintf(`sh -c 'trap "" TERM; echo $$ > %s; while :; do sleep 1; done' & sleep 0.1`, pidFile)},
		Grace:   time.Hour,
		Timeout: 500 * time.Millisecond,
	})
	if err != nil || res.Stopped != "timeout" {
		t.Fatalf("res %+v err %v", res, err)
	}
	if pid := waitPid(t, pidFile); !gone(pid) {
		kill(pid)
		t.Fatalf("child %d survived", pid)
	}
}

// A process muster cannot find (it cleared its environment and left the
// session) holding stdout delays Run by PipeGrace at most, not for ever.
func TestUnfoundHolderOfPipesIsNotWaitedFor(t *testing.T) {
	needProc(t)
	if _, err := exec.LookPath("env"); err != nil {
		t.Skip("no env")
	}
	pidFile := filepath.Join(t.TempDir(), "hidden.pid")
	res, err := Run(context.Background(), Spec{
		Argv: []string{"sh", "-c", fmt.Sprintf(`env -i setsid sh -c 'echo $$ > %s; exec sleep 1000' & sleep 0.2`, pidFile)},
	})
	pid := waitPid(t, pidFile)
	defer kill(pid)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("res %+v err %v", res, err)
	}
}

// KillStale kills what a muster that is gone left running, and nothing
// of a live muster's.
func TestKillStale(t *testing.T) {
	needProc(t)
	// A dead muster: pid 1's pid with a start time it never had.
	stale := exec.Command("sleep", "1000")
	stale.Env = append(os.Environ(), MarkEnv+"=1.999999999.7")
	live := exec.Command("sleep", "1000")
	live.Env = append(os.Environ(), MarkEnv+"="+newMark())
	for _, c := range []*exec.Cmd{stale, live} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Process.Kill()
	}
	waitMark := func(pid int) {
		for i := 0; i < 200 && markOf(pid) == ""; i++ {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitMark(stale.Process.Pid)
	waitMark(live.Process.Pid)
	if n := KillStale(map[string]bool{"1.999999999": true, ownMark(): true}, nil); n != 1 {
		t.Errorf("killed %d", n)
	}
	if err := stale.Wait(); err == nil {
		t.Error("the stale process was not killed")
	}
	if p, ok := readStat(live.Process.Pid); !ok || p.zombie {
		t.Error("a live muster's process was killed")
	}
}

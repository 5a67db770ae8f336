package confine_test

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

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// alive tells whether any thread of pid runs (neither gone nor a
// zombie).
func alive(pid int) bool { return !proc.Defunct(pid) }

// TestLandlockOnlyLeftoverCannotEscape (the red team's attack): without
// the namespaces, a daemon that empties its environment (env -i: no
// family mark), leaves the session (setsid -f) and ignores SIGTERM, whose
// parent then exits, no longer belongs to any process muster knows: it
// outlived its invocation and could write the clone once the next task
// had it. The launcher is now the invocation's subreaper: such a
// leftover ends with the invocation, after the program exits and when a
// timeout stops it.
func TestLandlockOnlyLeftoverCannotEscape(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("no setsid")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	daemon := `env -i ` + setsid + ` -f /bin/sh -c 'trap "" TERM; echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec /bin/sleep 1000' "$PIDFILE" </dev/null >/dev/null 2>&1`
	// The red team's: its first thread exits (SYS_exit), so /proc shows
	// the process as a zombie while its other thread runs on.
	headless := `env -i ` + setsid + ` -f /usr/bin/python3 -c '
import threading, ctypes, time, os, sys, signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
p = sys.argv[1]
def run():
    time.sleep(0.2); open(p + ".tmp", "w").write(str(os.getpid())); os.rename(p + ".tmp", p); time.sleep(1000)
threading.Thread(target=run).start()
ctypes.CDLL(None).syscall(60, 0)' "$PIDFILE" </dev/null >/dev/null 2>&1`
	for _, tc := range []struct {
		name, start, tail string
		timeout           time.Duration
	}{
		{"the program exits", daemon, "sleep 0.2; echo bye", 0},
		{"a timeout stops it", daemon, "echo started; exec sleep 1000", 700 * time.Millisecond},
		{"its first thread gone", headless, "echo bye", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if strings.Contains(tc.start, "python3") {
				if _, err := os.Stat("/usr/bin/python3"); err != nil {
					t.Skip("no /usr/bin/python3")
				}
			}
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "daemon.pid")
			script := tc.start + `
				while [ ! -s "$PIDFILE" ]; do sleep 0.01; done
				` + tc.tail
			c := &muster.Confinement{Launcher: exe, Writable: []string{dir}}
			res, err := proc.Run(context.Background(), proc.Spec{
				Argv: []string{"sh", "-c", script}, Dir: dir, Confine: c, Timeout: tc.timeout,
				Env: append(os.Environ(), "PIDFILE="+pidFile), Grace: 300 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the daemon did not start: %v (exit %d)", err, res.ExitCode)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			if pid <= 0 {
				t.Fatalf("pid file %q", data)
			}
			deadline := time.Now().Add(3 * time.Second)
			for alive(pid) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the daemon (pid %d, env -i, setsid, SIGTERM ignored) outlived its invocation (exit %d, stopped %q)", pid, res.ExitCode, res.Stopped)
			}
			if tc.timeout == 0 && res.ExitCode != 0 {
				t.Errorf("the program's exit status: %d, want 0", res.ExitCode)
			}
		})
	}
}

// The first thread's test runs on the process's first thread: the main
// goroutine holds it from the start (an init's LockOSThread).
func init() {
	if len(os.Args) > 1 && os.Args[1] == "firstthread" {
		runtime.LockOSThread()
	}
}

// firstThread (TestMain runs it as "firstthread DIR") starts a program
// confined from the process's first thread (confine.StartHere) and says
// whether that thread is confined now (the process's NoNewPrivs).
func firstThread(dir string) int {
	if err := confine.StartHere("/bin/sh", []string{"sh", "-c", "exit 0"}, []string{dir}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	data, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "NoNewPrivs:") {
			fmt.Println(strings.Join(strings.Fields(l), ""))
		}
	}
	return 0
}

// TestLauncherFirstThreadNeverConfined (the red team's): the thread
// __confine confines before it starts the program is never the
// process's first, which cannot end: confined, that thread would stay in
// the program's Landlock domain without a capability, and the program
// could ptrace its launcher through it. Asked to start the program from
// the first thread, it does so from another.
func TestLauncherFirstThreadNeverConfined(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "firstthread", t.TempDir()).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "NoNewPrivs:0" {
		t.Fatalf("the first thread after starting a confined program: %q, %v: want NoNewPrivs:0", out, err)
	}
}

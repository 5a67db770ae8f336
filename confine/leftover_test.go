package confine_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/proc"
)

// alive tells whether pid runs (neither gone nor a zombie).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

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
	for _, tc := range []struct {
		name, tail string
		timeout    time.Duration
	}{
		{"the program exits", "sleep 0.2; echo bye", 0},
		{"a timeout stops it", "echo started; exec sleep 1000", 700 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "daemon.pid")
			script := `env -i ` + setsid + ` -f /bin/sh -c 'trap "" TERM; echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec /bin/sleep 1000' "$PIDFILE" </dev/null >/dev/null 2>&1
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

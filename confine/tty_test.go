//go:build linux

package confine_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/muster-run/muster"
)

// openPty opens a terminal of the host's devpts, as the user's terminal
// emulator holds one: its master and the number of its /dev/pts/N.
func openPty(t *testing.T) (*os.File, int) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		t.Skipf("ptsname: %v", err)
	}
	// Keep the slave open so that a write to it reaches the master.
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		unix.Close(fd)
		t.Skipf("open the terminal: %v", err)
	}
	master := os.NewFile(uintptr(fd), "ptmx")
	t.Cleanup(func() { slave.Close(); master.Close() })
	return master, n
}

// TestSandboxOtherTerminalsUnreachable: a confined program cannot write
// to the user's terminals (another window's shell, the terminal muster
// draws its progress on): in the sandbox /dev/pts is a devpts instance of
// its own, where it may still open terminals of its own.
func TestSandboxOtherTerminalsUnreachable(t *testing.T) {
	t.Parallel()
	needNamespaces(t)
	master, n := openPty(t)
	clone := hostTmp(t)
	out, _ := sandboxed(t, &muster.Confinement{Writable: []string{clone}}, clone, `
		printf 'INJECTED-BY-AGENT\n' > /dev/pts/$PTS 2>/dev/null && echo WROTE-TERMINAL || echo no-terminal
		ls /dev/pts | grep -c '^[0-9]'
		exec 3<>/dev/ptmx && echo own-ptmx || echo no-own-ptmx
	`, "PTS="+strconv.Itoa(n))
	wantLines(t, out, "no-terminal", "0", "own-ptmx")
	_ = master.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	buf := make([]byte, 256)
	if k, _ := master.Read(buf); k > 0 && strings.Contains(string(buf[:k]), "INJECTED") {
		t.Errorf("the confined program wrote to the user's terminal: %q\n%s", buf[:k], out)
	}
}

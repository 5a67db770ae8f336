package runner

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// A killed orphan nobody has reaped yet is a zombie: its group is gone
// for killOrphan, which must not wait for init to reap it.
func TestGroupOfZombiesIsNotAlive(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait()
	defer syscall.Kill(-pid, syscall.SIGKILL)
	if !groupAlive(pid) {
		t.Fatal("a running group is not alive")
	}
	killOrphan(pid) // the leader stays a zombie: this test, its parent, has not reaped it
	if syscall.Kill(-pid, 0) != nil {
		t.Fatal("the group was reaped: nothing left to tell apart")
	}
	if groupAlive(pid) {
		t.Fatal("a group of zombies is alive")
	}
}

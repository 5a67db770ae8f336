package runner

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/muster-run/muster/internal/procid"
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
	if err := killOrphan(procid.Of(pid)); err != nil { // the leader stays a zombie: this test, its parent, has not reaped it
		t.Fatal(err)
	}
	if syscall.Kill(-pid, 0) != nil {
		t.Fatal("the group was reaped: nothing left to tell apart")
	}
	if groupAlive(pid) {
		t.Fatal("a group of zombies is alive")
	}
}

// A journaled pid whose process started at another time (the pid went to
// another program), or in another boot, is left alone; the agent itself
// is killed.
func TestOrphanIsKilledOnlyIfItIsStillTheAgent(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer syscall.Kill(-pid, syscall.SIGKILL)
	me := procid.Of(pid)
	if me.Start == 0 || me.Boot == "" {
		t.Fatalf("identity %+v: start time or boot id unknown", me)
	}
	other := me
	other.Start++
	if err := killOrphan(other); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Errorf("another start time: %v, want it left alone", err)
	}
	rebooted := me
	rebooted.Boot = "00000000-0000-0000-0000-000000000000"
	if err := killOrphan(rebooted); err == nil || !strings.Contains(err.Error(), "another boot") {
		t.Errorf("another boot: %v, want it left alone", err)
	}
	select {
	case <-exited:
		t.Fatal("a process that is not the agent was killed")
	default:
	}
	if err := killOrphan(me); err != nil {
		t.Fatal(err)
	}
	<-exited // killed: Wait returns
}

package confine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/proc"
)

// orphanParent is a stand-in for muster (TestMain runs it as
// "orphanparent TOKEN DIR"): it runs a sandboxed shell that would sleep
// for ever, its command line naming TOKEN, says "started" once the shell
// runs, and waits to be killed.
func orphanParent(token, dir string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c := &muster.Confinement{Launcher: exe, Namespaces: true, Writable: []string{dir}}
	_, err = proc.Run(context.Background(), proc.Spec{
		Argv: []string{"sh", "-c", "echo started; sleep 1000; :", token}, Dir: dir, Confine: c, Env: os.Environ(),
		OnLine: func(l string) { fmt.Println(l) },
	})
	fmt.Fprintln(os.Stderr, "the sandbox ended:", err)
	return 1
}

// TestSandboxDiesWithMuster: when muster is killed (kill -9, the OOM
// killer), the sandbox of each invocation it was running ends at once,
// and the agent in it: none goes on working, and spending, until a
// resume finds it.
func TestSandboxDiesWithMuster(t *testing.T) {
	t.Parallel()
	exe := needNamespaces(t)
	dir := hostTmp(t)
	token := fmt.Sprintf("orphan-%d-%d", os.Getpid(), time.Now().UnixNano())
	parent := exec.Command(exe, "orphanparent", token, dir)
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	parent.Stderr = os.Stderr
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "started" {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatalf("the sandboxed shell did not start: %q %v", line, err)
	}
	_ = parent.Process.Signal(syscall.SIGKILL)
	_ = parent.Wait()
	// The kernel ends the namespace as soon as stage one sees muster
	// gone; 20 s is only a bound for a loaded machine.
	deadline := time.Now().Add(20 * time.Second)
	for {
		left := matching(hostProcesses(t), token)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				var pid int
				if _, err := fmt.Sscanf(p, "%d:", &pid); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			t.Fatalf("the agent outlived muster: %q", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func matching(procs []string, token string) []string {
	var out []string
	for _, p := range procs {
		if strings.Contains(p, token) {
			out = append(out, p)
		}
	}
	return out
}

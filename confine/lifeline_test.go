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
// runs, and waits to be killed. A TOKEN that starts with "alone-" runs
// it without namespaces (Landlock and the capability drop only).
func orphanParent(token, dir string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c := &muster.Confinement{Launcher: exe, Namespaces: !strings.HasPrefix(token, "alone-"), Writable: []string{dir}}
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
	diesWithMuster(t, exe, fmt.Sprintf("orphan-%d-%d", os.Getpid(), time.Now().UnixNano()))
}

// TestLandlockOnlyDiesWithMuster: without namespaces too, the agent
// ends when muster is killed (its __confine reads the lifeline's end).
func TestLandlockOnlyDiesWithMuster(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	diesWithMuster(t, exe, fmt.Sprintf("alone-orphan-%d-%d", os.Getpid(), time.Now().UnixNano()))
}

// diesWithMuster starts a stand-in for muster (orphanParent) whose
// confined shell's command line names token, kills it with SIGKILL once
// the shell runs, and waits for the shell to end.
func diesWithMuster(t *testing.T, exe, token string) {
	t.Helper()
	dir := hostTmp(t)
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

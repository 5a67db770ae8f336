//go:build linux

package confine_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// unixProbe is the test binary run as a confined program: it connects
// to the abstract Unix socket name and says whether it got through.
func unixProbe(name string) int {
	c, err := net.Dial("unix", "@"+name)
	if err != nil {
		fmt.Println("abstract-refused:", err)
		return 0
	}
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	fmt.Printf("ABSTRACT-CONNECTED:%s\n", buf[:n])
	c.Close()
	return 0
}

// TestSandboxAbstractSocketsUnreachable: an abstract Unix socket of the
// user's (no file: neither a hide list nor a file rule covers it; D-Bus,
// X11 and many IDE helpers listen on one) cannot be reached from the
// sandbox: its network namespace has abstract sockets of its own, and
// without the namespaces Landlock's IPC scope (ABI 6) refuses it.
func TestSandboxAbstractSocketsUnreachable(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("muster-test-abstract-%d", os.Getpid())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Skipf("no abstract sockets: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("user-service"))
			c.Close()
		}
	}()
	probe := []string{exe, "unixprobe", name}
	if out, _ := exec.Command(probe[0], probe[1:]...).CombinedOutput(); !strings.Contains(string(out), "ABSTRACT-CONNECTED:user-service") {
		t.Fatalf("an unconfined child cannot reach the socket, the test proves nothing: %s", out)
	}
	dir := t.TempDir()
	if confine.Probe().ABI >= 6 {
		c := &muster.Confinement{Launcher: exe, Writable: []string{dir}}
		args := append(c.Prefix(), probe...)
		if out, _ := exec.Command(args[0], args[1:]...).CombinedOutput(); !strings.Contains(string(out), "abstract-refused") {
			t.Errorf("Landlock only: the confined program reached the user's abstract socket: %s", out)
		}
	}
	if confine.ProbeNamespaces(exe) != "" {
		return
	}
	var got strings.Builder
	_, err = proc.Run(context.Background(), proc.Spec{
		Argv: probe, Dir: dir, Env: os.Environ(),
		Confine:  &muster.Confinement{Launcher: exe, Namespaces: true, Writable: []string{dir}},
		OnLine:   func(l string) { got.WriteString(l + "\n") },
		OnStderr: func(l string) { got.WriteString(l + "\n") },
	})
	if err != nil || !strings.Contains(got.String(), "abstract-refused") {
		t.Errorf("namespaces: the confined program reached the user's abstract socket (%v): %s", err, got.String())
	}
}

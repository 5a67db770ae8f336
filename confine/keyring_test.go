//go:build linux

package confine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// keyProbe is the test binary run as a confined program: it reads the
// key with the given id from the kernel's keyrings and prints it.
func keyProbe(id string) int {
	n, err := strconv.Atoi(id)
	if err != nil {
		return 2
	}
	buf := make([]byte, 256)
	m, err := unix.KeyctlBuffer(unix.KEYCTL_READ, n, buf, 0)
	if err != nil {
		// Possession through a link of the user's keyring into its own
		// session keyring.
		_, _ = unix.KeyctlInt(unix.KEYCTL_LINK, unix.KEY_SPEC_USER_KEYRING, unix.KEY_SPEC_SESSION_KEYRING, 0, 0)
		m, err = unix.KeyctlBuffer(unix.KEYCTL_READ, n, buf, 0)
	}
	if err != nil {
		fmt.Println("key-denied:", err)
		return 0
	}
	fmt.Printf("KEY-READ:%s\n", buf[:m])
	return 0
}

// TestSandboxKeyringNotShared: a secret in the session keyring muster
// runs in (a login session's, where Kerberos tickets and the like live)
// is not readable by a confined program, with the namespaces and in the
// Landlock-only fallback: the thread that starts (or becomes) the
// program joins a fresh session keyring first. keyctl is no file Landlock or the mount namespace could hide.
func TestSandboxKeyringNotShared(t *testing.T) {
	needLandlock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The session keyring is a thread's; this one's children inherit it.
	// The thread is never unlocked: it ends with the test.
	runtime.LockOSThread()
	if _, err := unix.KeyctlJoinSessionKeyring(fmt.Sprintf("muster-test-%d", os.Getpid())); err != nil {
		t.Skipf("no keyrings here: %v", err)
	}
	secret := fmt.Sprintf("user-secret-%d", os.Getpid())
	id, err := unix.AddKey("user", "muster-redteam", []byte(secret), unix.KEY_SPEC_SESSION_KEYRING)
	if err != nil {
		t.Skipf("add_key: %v", err)
	}
	probe := []string{exe, "keyprobe", strconv.Itoa(id)}
	// Unconfined, a child of this thread reads it: the attack is real.
	if out, _ := exec.Command(probe[0], probe[1:]...).CombinedOutput(); !strings.Contains(string(out), "KEY-READ:"+secret) {
		t.Fatalf("an unconfined child cannot read the key, the test proves nothing: %s", out)
	}
	dir := t.TempDir()
	c := &muster.Confinement{Launcher: exe, Writable: []string{dir}}
	args := append(c.Prefix(), probe...)
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "key-denied") {
		t.Errorf("Landlock only: the confined program read the session keyring (%v): %s", err, out)
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
	if err != nil || !strings.Contains(got.String(), "key-denied") {
		t.Errorf("namespaces: the confined program read the session keyring (%v): %s", err, got.String())
	}
}

// TestSandboxUserKeyringNotShared: the user's own keyring (@u, which a
// program of the same uid may link into its session keyring to possess
// its keys) is another in the sandbox's user namespace. Without the
// namespaces it is the user's: docs/security.md says so.
func TestSandboxUserKeyringNotShared(t *testing.T) {
	exe := needNamespaces(t)
	secret := fmt.Sprintf("user-keyring-secret-%d", os.Getpid())
	id, err := unix.AddKey("user", "muster-redteam-u", []byte(secret), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Skipf("add_key: %v", err)
	}
	defer unix.KeyctlInt(unix.KEYCTL_UNLINK, id, unix.KEY_SPEC_USER_KEYRING, 0, 0)
	probe := []string{exe, "keyprobe", strconv.Itoa(id)}
	if out, _ := exec.Command(probe[0], probe[1:]...).CombinedOutput(); !strings.Contains(string(out), "KEY-READ:"+secret) {
		t.Fatalf("an unconfined child cannot read the key, the test proves nothing: %s", out)
	}
	dir := t.TempDir()
	var got strings.Builder
	_, err = proc.Run(context.Background(), proc.Spec{
		Argv: probe, Dir: dir, Env: os.Environ(),
		Confine:  &muster.Confinement{Launcher: exe, Namespaces: true, Writable: []string{dir}},
		OnLine:   func(l string) { got.WriteString(l + "\n") },
		OnStderr: func(l string) { got.WriteString(l + "\n") },
	})
	if err != nil || !strings.Contains(got.String(), "key-denied") {
		t.Errorf("namespaces: the confined program read the user's keyring (%v): %s", err, got.String())
	}
}

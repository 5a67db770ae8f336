//go:build linux

package confine_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// leakedFD is the number the test gives a descriptor muster inherited
// without close-on-exec.
const leakedFD = 211

// TestSandboxInheritsNoStrayDescriptor: a descriptor muster itself
// inherited without close-on-exec (a make jobserver's pipe, a socket a
// launcher or an IDE left open: Go's exec passes such descriptors on to
// every child) does not reach the confined program, with or without the
// namespaces: through it the program would reach what no mount, hide
// list or network namespace covers.
func TestSandboxInheritsNoStrayDescriptor(t *testing.T) {
	needLandlock(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := unix.Dup2(int(w.Fd()), leakedFD); err != nil { // no close-on-exec, as inherited
		t.Skipf("dup2: %v", err)
	}
	defer unix.Close(leakedFD)
	script := `test -e /proc/self/fd/211 && echo STRAY-FD-OPEN || echo no-stray-fd`
	dir := t.TempDir()
	for _, ns := range []bool{false, true} {
		if ns && confine.ProbeNamespaces(exe) != "" {
			continue
		}
		var got strings.Builder
		_, err := proc.Run(context.Background(), proc.Spec{
			Argv: []string{"sh", "-c", script}, Dir: dir, Env: os.Environ(),
			Confine:  &muster.Confinement{Launcher: exe, Namespaces: ns, Writable: []string{dir}},
			OnLine:   func(l string) { got.WriteString(l + "\n") },
			OnStderr: func(l string) { got.WriteString(l + "\n") },
		})
		if err != nil || !strings.Contains(got.String(), "no-stray-fd") {
			t.Errorf("namespaces %v: a descriptor muster inherited reached the program (%v): %s", ns, err, got.String())
		}
	}
}

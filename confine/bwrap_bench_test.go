package confine_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

// BenchmarkBubblewrap measures the road not taken for the sandbox's
// namespaces (ARCHITECTURE §8.1, "no bubblewrap"): Debian's bwrap
// building them (user, PID, network and IPC namespaces, / read-only, a
// fresh /proc and /dev, tmpfs on /tmp and /dev/shm and on each hidden
// directory, the clone bound back), started the way Go starts a plain
// program (vfork: no user namespace in the clone call), then the
// launcher's Landlock-only __confine before /bin/true; against muster's
// sandbox from the same launcher. It reports ms-median, ms-cpu/op and
// ms-machine/op (benchStarts): read ms-machine/op, since the CPU of
// bwrap's namespace is not all in its parent's rusage. Skipped without
// bwrap.
//
//	go test ./confine -run '^$' -bench Bubblewrap -benchtime 300x -count 3
func BenchmarkBubblewrap(b *testing.B) {
	bin, clone := benchBinary(b)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("no bwrap here (Debian: apt-get install bubblewrap)")
	}
	launcher := filepath.Join(filepath.Dir(bin), confine.LauncherName)
	home := os.Getenv("HOME")
	ns := &muster.Confinement{Launcher: launcher, Writable: []string{clone}, Namespaces: true, Hide: confine.DefaultHide(home)}
	if r := confine.ProbeNamespaces(launcher); r != "" {
		b.Skip(r)
	}
	args := []string{"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"}
	for _, h := range confine.DefaultHide(home) {
		if fi, err := os.Lstat(h); err == nil && fi.IsDir() {
			args = append(args, "--tmpfs", h)
		}
	}
	args = append(args, "--ro-bind", filepath.Dir(bin), filepath.Dir(bin), "--bind", clone, clone, "--chdir", clone,
		"--", launcher, muster.ConfineCommand, "--write", clone, "--", "/bin/true")
	b.Run("bwrap+landlock", func(b *testing.B) {
		benchStarts(b, func() error {
			cmd := exec.Command(bwrap, args...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("bwrap: %w: %s", err, out)
			}
			return nil
		})
	})
	b.Run("sandbox-launcher", func(b *testing.B) { benchRuns(b, ns, clone, []string{"/bin/true"}) })
}

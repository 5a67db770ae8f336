package confine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// BenchmarkReexec measures what confinement adds to starting an agent:
// the real muster binary's `__confine` re-exec (start, Landlock ruleset,
// execve) before /bin/true, against /bin/true started directly, each in
// its own process group as muster starts agents. It reports the median
// start-to-exit time of each (ms-median).
//
//	go test ./confine -run '^$' -bench Reexec -benchtime 200x -count 5
func BenchmarkReexec(b *testing.B) {
	needLandlock(b)
	bin := filepath.Join(b.TempDir(), "muster")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/muster-run/muster/cmd/muster")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as a release is built
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	clone := b.TempDir()
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true")
	}
	c := &muster.Confinement{Launcher: bin, Writable: []string{clone, filepath.Dir(clone) + "/scratch", "/tmp"}}
	for _, bc := range []struct {
		name string
		argv []string
	}{
		{"direct", []string{truePath}},
		{"confined", append(c.Prefix(), truePath)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			times := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(bc.argv[0], bc.argv[1:]...)
				cmd.Dir = clone
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				t0 := time.Now()
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(t0))
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
		})
	}
}

// BenchmarkSandboxStart measures what the sandbox adds to starting an
// invocation, side by side: /bin/true started directly, through the
// Landlock-only `__confine` (capability drop, Landlock, execve), and
// through the sandbox (new user, PID, mount, network and IPC namespaces;
// stage one's mounts, loopback and reaping; the program started from its
// confined thread), the sandbox started by the launcher installed beside
// muster (sandbox-launcher, confine.LauncherName) instead of muster's own
// executable, and the Landlock-only one with the hide list
// (landlock-hide) and the sandbox in a cgroup of its own (sandbox-limits,
// where one can be made), each through internal/proc as muster starts agents,
// with the real muster binary. It reports the median start-to-return time
// of each (ms-median) and the CPU time of each start and all it ran
// (ms-cpu/op).
//
//	go test ./confine -run '^$' -bench SandboxStart -benchtime 200x -count 5
func BenchmarkSandboxStart(b *testing.B) {
	bin, clone := benchBinary(b)
	base := &muster.Confinement{Launcher: bin, Writable: []string{clone}}
	ns := *base
	ns.Namespaces = true
	ns.Hide = confine.DefaultHide(os.Getenv("HOME"))
	if r := confine.ProbeNamespaces(bin); r != "" {
		b.Skip(r)
	}
	// Landlock-only with the hide list (ReadRoots lists the directories
	// on the way to each hidden path), and the sandbox in a cgroup of its
	// own ([run] max_pids, max_memory).
	hidden := *base
	hidden.Hide = confine.LandlockHide(os.Getenv("HOME"))
	limited := ns
	limited.MaxPids, limited.MaxMemory = 512, 1<<30
	// The sandbox started by the launcher installed beside muster.
	small := ns
	small.Launcher = filepath.Join(filepath.Dir(bin), confine.LauncherName)
	cases := []struct {
		name string
		c    *muster.Confinement
	}{{"direct", nil}, {"landlock", base}, {"landlock-hide", &hidden}, {"sandbox", &ns}, {"sandbox-launcher", &small}}
	if ok, _ := proc.ProbeCgroups().Can(512, 1<<30); ok {
		cases = append(cases, struct {
			name string
			c    *muster.Confinement
		}{"sandbox-limits", &limited})
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			benchRuns(b, bc.c, clone, []string{"true"})
		})
	}
}

// BenchmarkKillStep measures the attempt-end kill step: an invocation
// that leaves a daemon behind (setsid, holding no pipe), from start to
// Run's return once the daemon is dead, against one that leaves nothing;
// Landlock-only (the family scan and kill through /proc) and in the
// sandbox (the namespace ends with stage one). It reports the median
// (ms-median); the kill step is the difference to "clean".
//
//	go test ./confine -run '^$' -bench KillStep -benchtime 100x -count 5
func BenchmarkKillStep(b *testing.B) {
	bin, clone := benchBinary(b)
	base := &muster.Confinement{Launcher: bin, Writable: []string{clone}}
	ns := *base
	ns.Namespaces = true
	if r := confine.ProbeNamespaces(bin); r != "" {
		b.Skip(r)
	}
	leaver := []string{"sh", "-c", "setsid sleep 600 </dev/null >/dev/null 2>&1 &"}
	for _, bc := range []struct {
		name string
		c    *muster.Confinement
		argv []string
	}{
		{"landlock/clean", base, []string{"true"}}, {"landlock/leaver", base, leaver},
		{"sandbox/clean", &ns, []string{"true"}}, {"sandbox/leaver", &ns, leaver},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchRuns(b, bc.c, clone, bc.argv)
		})
	}
}

func benchBinary(b *testing.B) (bin, clone string) {
	b.Helper()
	needLandlock(b)
	dir := b.TempDir()
	bin = filepath.Join(dir, "muster")
	build := exec.Command("go", "build", "-trimpath", "-o", dir+"/", "github.com/muster-run/muster/cmd/muster", "github.com/muster-run/muster/cmd/muster-confine")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as a release is built
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin, b.TempDir()
}

func benchRuns(b *testing.B, c *muster.Confinement, dir string, argv []string) {
	b.Helper()
	benchStarts(b, func() error {
		res, err := proc.Run(context.Background(), proc.Spec{Argv: argv, Dir: dir, Confine: c, Grace: time.Second})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d", res.ExitCode)
		}
		return err
	})
}

// benchStarts runs start b.N times and reports the median time of one
// (ms-median), the CPU of what it started (ms-cpu/op) and the CPU the
// whole machine spent meanwhile (ms-machine/op: with the kernel's
// threads, such as the clean-up of each network namespace, and the
// benchmark's own forks; meaningful on a quiet machine only).
func benchStarts(b *testing.B, start func() error) {
	b.Helper()
	times := make([]time.Duration, 0, b.N)
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	busy0 := machineBusy(b)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := start(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	busy := machineBusy(b) - busy0
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
	// The CPU of the invocations and all they started (each reaped by its
	// parent, so counted in its parent's children): the steadier figure
	// under load.
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "ms-cpu/op")
	b.ReportMetric(float64(busy.Microseconds())/1000/float64(b.N), "ms-machine/op")
}

// machineBusy is the CPU time all CPUs have spent not idle since boot
// (/proc/stat: user, nice, system, irq, softirq, steal).
func machineBusy(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Skip(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	var ticks int64
	for i, f := range strings.Fields(line)[1:] {
		if i == 3 || i == 4 || i > 7 { // idle, iowait; guest time is in user already
			continue
		}
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Skip("/proc/stat: ", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}

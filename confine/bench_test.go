package confine_test

import (
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster"
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
	build := exec.Command("go", "build", "-o", bin, "github.com/muster-run/muster/cmd/muster")
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

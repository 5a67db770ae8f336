package driver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/journal"
	"github.com/muster-run/muster/mock"
)

// BenchmarkOverhead measures the scheduler and journal cost per task: 10,000
// zero-work tasks (a chain every 10, so dependencies are exercised; each
// owning its own file, so the integration queue batches them) on 16
// clones, with the real journal (group-committed fsyncs) and no-op git.
// Report: ns/task (wall), ns_cpu/task (the process's CPU time, user and
// system), tasks/fsync and tasks per move of the run branch (one synced
// Integrating each).
func BenchmarkOverhead(b *testing.B) {
	const n = 10_000
	p := &muster.Plan{}
	for i := 0; i < n; i++ {
		t := &muster.Task{ID: muster.TaskID(fmt.Sprintf("t%05d", i)), Title: "x", Owns: []string{fmt.Sprintf("f%05d", i)}}
		if i%10 != 0 {
			t.After = []muster.TaskID{muster.TaskID(fmt.Sprintf("t%05d", i-1))}
		}
		p.Tasks = append(p.Tasks, t)
	}
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "x", Clones: 16}}}
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", sync), func(b *testing.B) {
			syncs, moves := 0, 0
			var before, after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				j, _, err := journal.Open(filepath.Join(dir, journal.FileName), journal.Options{NoSync: !sync})
				if err != nil {
					b.Fatal(err)
				}
				cj := &countingJournal{Journal: j}
				st, err := driver.Run(context.Background(), driver.Options{
					RunID: "bench", Plan: p, Config: cfg, Journal: cj, Workspace: &mock.Workspace{},
					Executors: map[string]muster.Executor{"x": &mock.Executor{}}, ScratchDir: dir,
					Overlap: func(a, b []string) bool { return a[0] == b[0] },
					OnEvent: func(e *muster.Event, _ *engine.State) {
						if e.Type == muster.EvIntegrating {
							moves++
						}
					},
				})
				j.Close()
				if err != nil || st.RunState != muster.RunSucceeded {
					b.Fatalf("%v %s", err, st.RunState)
				}
				syncs += cj.syncs
			}
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
			// CPU time (user and system) per task: the steadier figure on a
			// loaded machine, where wall time is mostly waiting for a core.
			cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
			b.ReportMetric(float64(cpu)/float64(b.N*n), "ns_cpu/task")
			b.ReportMetric(float64(b.N*n)/float64(syncs), "tasks/fsync")
			b.ReportMetric(float64(b.N*n)/float64(moves), "tasks/move")
		})
	}
}

// countingJournal counts group commits.
type countingJournal struct {
	*journal.Journal
	syncs int
}

func (c *countingJournal) Sync() error {
	c.syncs++
	return c.Journal.Sync()
}

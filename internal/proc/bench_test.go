package proc

import (
	"context"
	"sort"
	"testing"
	"time"
)

// BenchmarkRun measures one invocation of /bin/true through Run: start,
// wait, and stopping its family (the /proc scans). It reports the median
// (ms-median).
//
//	go test ./internal/proc -run '^$' -bench Run -benchtime 200x -count 5
func BenchmarkRun(b *testing.B) {
	times := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := Run(context.Background(), Spec{Argv: []string{"true"}}); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median")
}

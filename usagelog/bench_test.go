package usagelog_test

import (
	"context"
	"os"
	"testing"

	"github.com/muster-run/muster/usagelog"
)

// BenchmarkScanClaude scans the corpus in $USAGELOG_BENCH_DIR (make one
// with `go run ./internal/cmd/usagebench -gen-only`).
func BenchmarkScanClaude(b *testing.B) {
	dir := os.Getenv("USAGELOG_BENCH_DIR")
	if dir == "" {
		b.Skip("set USAGELOG_BENCH_DIR to a Claude log folder")
	}
	for b.Loop() {
		res, err := usagelog.ScanClaude(context.Background(), usagelog.Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(res.Stats.Bytes)
	}
}

package codex

import (
	"bytes"
	"os"
	"testing"

	"github.com/muster-run/muster/internal/agentkit"
)

// BenchmarkParse measures parsing a recorded --json run (6 events).
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/write.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	u := &usageState{dir: b.TempDir()}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s := agentkit.NewStream(nil)
		for _, l := range lines {
			if err := parseLine(l, s, u); err != nil {
				b.Fatal(err)
			}
		}
	}
}

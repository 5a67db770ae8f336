package claude

import (
	"bytes"
	"os"
	"testing"

	"github.com/muster-run/muster/internal/agentkit"
)

// BenchmarkParse measures parsing a recorded stream-json run (5 events).
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/write.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s := agentkit.NewStream(nil)
		for _, l := range lines {
			if err := parseLine(l, s); err != nil {
				b.Fatal(err)
			}
		}
	}
}

package claude

import (
	"testing"

	"github.com/muster-run/muster/internal/agentkit/agenttest"
)

// BenchmarkParse measures parsing a recorded stream-json run (5 events).
func BenchmarkParse(b *testing.B) {
	agenttest.BenchParse(b, "testdata/write.jsonl", parseLine)
}

package claude

import (
	"testing"

	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// BenchmarkParse measures parsing a recorded stream-json run (5 events).
func BenchmarkParse(b *testing.B) {
	clitest.BenchParse(b, "testdata/write.jsonl", parseLine)
}

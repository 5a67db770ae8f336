package codex

import (
	"testing"

	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/agentkit/clitest"
)

// BenchmarkParse measures parsing a recorded --json run (6 events).
func BenchmarkParse(b *testing.B) {
	u := newUsageState(b.TempDir(), "", nil)
	clitest.BenchParse(b, "testdata/write.jsonl", func(l []byte, s *agentkit.Stream) error { return parseLine(l, s, u) })
}

package driver

import (
	"testing"

	"github.com/muster-run/muster"
)

func TestGateSummaryNamesFailingTests(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"--- FAIL: TestA (0.00s)\n    a_test.go:3: got 1, want 2\n--- FAIL: TestB (0.00s)\n    --- FAIL: TestB/sub (0.00s)\nFAIL\n", "TestA: got 1, want 2; also TestB"},
		{"--- FAIL: TestOnly (0.01s)\n--- FAIL: TestNext (0.00s)\nFAIL\n", "TestOnly; also TestNext"},
		{"build failed: undefined: x\n", "build failed: undefined: x"},
		{"", "exit 2, no output"},
	} {
		if got := gateSummary(muster.GateResult{Output: c.out, ExitCode: 2}); got != c.want {
			t.Errorf("gateSummary(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

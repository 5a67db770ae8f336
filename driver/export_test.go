package driver

import (
	"testing"
	"time"
)

// SetGatherLimit sets how long a batch waits for arriving commits, for
// the test t.
func SetGatherLimit(t testing.TB, d time.Duration) {
	old := gatherLimit
	gatherLimit = d
	t.Cleanup(func() { gatherLimit = old })
}

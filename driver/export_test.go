package driver

import (
	"testing"
	"time"
)

// SetGatherLimit bounds how long a batch waits for commits on their way
// to d, for the test t.
func SetGatherLimit(t testing.TB, d time.Duration) {
	lo, hi := gatherMin, gatherMax
	gatherMin, gatherMax = d, d
	t.Cleanup(func() { gatherMin, gatherMax = lo, hi })
}

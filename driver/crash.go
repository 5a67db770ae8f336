package driver

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Crash points for the crash test (Options.CrashAt, which the CLI takes
// from MUSTER_CRASH_AT; "panic:POINT" panics there instead, on the
// goroutine that reaches it). Besides these named points in an attempt, any
// event type names the moment right after the journal write of that
// event (before the fsync that would follow).
const (
	// CrashCommit is right after a task commit is made, before the
	// Committed event is sent.
	CrashCommit = "commit"
	// CrashIntegrate is right after the run branch moved to a task's
	// commit, before the Integrated event is sent.
	CrashIntegrate = "integrate"
	// CrashBatchAnnounced is right after the Integrating of a batch of
	// more than one commit is durable, before the branch moves.
	CrashBatchAnnounced = "batch-announced"
	// CrashBatch is right after the run branch moved over a batch of
	// more than one commit, before its Integrated events are sent.
	CrashBatch = "batch"
)

// crasher kills the process with SIGKILL the n-th time a point is
// reached: a test-only hook that makes kill -9 land at exact moments.
type crasher struct {
	point string
	n     int
	// panics: panic at the point instead of dying ("panic:POINT[:N]"),
	// to test the recovery of panics at goroutine boundaries.
	panics bool
	mu     sync.Mutex
	seen   int
}

// parseCrash reads "POINT" or "POINT:N" (N from 1; default 1), each
// optionally after "panic:".
func parseCrash(s string) (*crasher, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if rest, ok := strings.CutPrefix(s, "panic:"); ok {
		c, err := parseCrash(rest)
		if c != nil {
			c.panics = true
		}
		return c, err
	}
	point, num, found := strings.Cut(s, ":")
	n := 1
	if found {
		v, err := strconv.Atoi(num)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("crash point %q: want POINT or POINT:N with N >= 1", s)
		}
		n = v
	}
	return &crasher{point: point, n: n}, nil
}

// at counts point and dies on the chosen occurrence.
func (c *crasher) at(point string) {
	if c == nil || point != c.point {
		return
	}
	c.mu.Lock()
	c.seen++
	hit := c.seen == c.n
	c.mu.Unlock()
	if hit && c.panics {
		panic("test panic at crash point " + point)
	}
	if hit {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

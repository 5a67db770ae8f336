package engine

import (
	"hash/fnv"
	"strconv"
	"time"

	"github.com/muster-run/muster"
)

// Retry backoff: a task whose attempt failed and is retried waits
// RetryBase after its first charged failure, twice as long after each
// next one, at most RetryMax, with jitter (from half to all of the wait),
// so that a flaky task does not burn its Retries in a burst and tasks
// retried together do not start again together.
const (
	RetryBase = time.Second
	RetryMax  = 2 * time.Minute
)

// RetryBackoff is the wait before the next attempt of task id of run
// after charged failed attempts (those that count against Retries; 0:
// none). The jitter is drawn from the run, the task and the count, not
// from a random source, so that replaying the journal decides the same.
func RetryBackoff(run string, id muster.TaskID, charged int) time.Duration {
	if charged <= 0 {
		return 0
	}
	d := RetryBase
	for i := 1; i < charged && d < RetryMax; i++ {
		d *= 2
	}
	if d > RetryMax {
		d = RetryMax
	}
	h := fnv.New64a()
	h.Write([]byte(run + "\x00" + string(id) + "\x00" + strconv.Itoa(charged)))
	frac := float64(h.Sum64()%1000) / 1000 // [0, 1)
	return d/2 + time.Duration(frac*float64(d/2))
}

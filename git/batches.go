package git

import (
	"sync"
	"time"
)

// Batches keeps one Batch (the long-lived git helper, ARCHITECTURE
// §8.4) per repository directory, for a process that reads the commits
// of many fleet bundles in the same few repositories: an orchestrator's
// clones, a worker's object stores. The commit of each bundle is then
// read without a git process of its own. A nil *Batches reads with a git
// process per commit. Safe for concurrent use.
type Batches struct {
	mu     sync.Mutex
	m      map[string]*Batch
	closed bool
}

// NewBatches returns an empty set.
func NewBatches() *Batches { return &Batches{m: map[string]*Batch{}} }

// get returns the Batch of dir (nil when s is nil or closed).
func (s *Batches) get(dir string) *Batch {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	b := s.m[dir]
	if b == nil {
		b = NewBatch(dir)
		s.m[dir] = b
	}
	return b
}

// Close stops every helper and returns the processes they started and
// their CPU time (user and system).
func (s *Batches) Close() (starts int, cpu time.Duration) {
	if s == nil {
		return 0, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for dir, b := range s.m {
		_ = b.Close()
		n, c := b.Stats()
		starts, cpu = starts+n, cpu+c
		delete(s.m, dir)
	}
	return starts, cpu
}

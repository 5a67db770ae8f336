package engine

import (
	"time"

	"github.com/muster-run/muster"
)

// MaxUncharged bounds the rate-limited attempts a task gets without
// counting them against its Retries.
const MaxUncharged = 20

// Pacing itself (muster.Pace, muster.NextPace) is a rule of the domain:
// the views fold it too. The state keeps one pace per credential.

// credCapacity is how many agents the executors of a credential can run
// at once (their capacity summed).
func (s *State) credCapacity(cred string) int {
	n := 0
	for _, e := range s.Config.Executors {
		if e.Credential() == cred {
			n += capacity(e)
		}
	}
	return n
}

// credRunning counts the leases held on a credential's executors.
func (s *State) credRunning(cred string) int {
	n := 0
	for _, l := range s.Leases {
		if e := s.Config.Executor(l.Executor); e != nil && e.Credential() == cred {
			n++
		}
	}
	return n
}

// paced reports whether a credential may not start another agent at now,
// and when to ask again.
func (s *State) paced(cred string, now time.Time, taken int) (bool, time.Time) {
	p, ok := s.Paces[cred]
	if !ok {
		return false, time.Time{}
	}
	return p.Holds(now, s.credRunning(cred)+taken, s.credCapacity(cred))
}

// applyRateLimited folds a RateLimited event: the credential's pace, and
// the task's count of attempts not charged to its Retries.
func (s *State) applyRateLimited(e *muster.Event) {
	spec := s.Config.Executor(e.Executor)
	if spec == nil {
		return
	}
	cred := spec.Credential()
	p, ok := s.Paces[cred]
	s.Paces[cred] = muster.NextPace(p, ok, e, cred, s.credRunning(cred), s.credCapacity(cred))
	if t := s.Tasks[e.Task]; t != nil {
		t.Uncharged++
	}
}

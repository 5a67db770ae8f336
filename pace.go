package muster

import (
	"hash/fnv"
	"strconv"
	"time"
)

// Pacing of rate-limited credentials: a rate limit halves the number of
// agents working at once on the credential and holds new starts back for a
// while (the agent's retry-after, or a growing backoff, with jitter); each
// quiet period without another rate limit lets one more agent start, until
// the credential is back at its full capacity. It is a function of the
// journal's RateLimited events and of the time, so a resume paces as the
// run did.
const (
	// PaceQuiet is how long a credential must go without a rate limit for
	// its limit to rise by one.
	PaceQuiet = 30 * time.Second
	// PaceBase is the first backoff when the agent named no retry-after;
	// each rate limit in a row doubles it, up to PaceMax.
	PaceBase = 2 * time.Second
	PaceMax  = 2 * time.Minute
)

// Pace is the adaptive limit of one credential.
type Pace struct {
	Limit int       // agents at once after the last rate limit (at least 1)
	Until time.Time // no new start before
	Hit   time.Time // the last rate limit
	Hits  int       // rate limits in a row (each within PaceMax of the last)
}

// LimitAt is the credential's limit at now: Limit, plus one for every quiet
// period since the last rate limit.
func (p Pace) LimitAt(now time.Time) int {
	if now.Before(p.Hit) {
		return p.Limit
	}
	up := int(now.Sub(p.Hit) / PaceQuiet)
	if up > 1<<20 {
		up = 1 << 20
	}
	return p.Limit + up
}

// NextRaise is when LimitAt next grows.
func (p Pace) NextRaise(now time.Time) time.Time {
	if now.Before(p.Hit) {
		return p.Hit.Add(PaceQuiet)
	}
	n := now.Sub(p.Hit)/PaceQuiet + 1
	return p.Hit.Add(n * PaceQuiet)
}

// RateLimited is the pace after a rate limit at now, on a credential with
// running agents at work (the failed one among them), when the agent asked
// to wait retryAfter (0: unknown). jitter in [0, 1) spreads the backoff of
// credentials hit at once.
func RateLimited(p Pace, active bool, now time.Time, running int, retryAfter time.Duration, jitter float64) Pace {
	if active && now.Before(p.Until) {
		// Agents that were under way when the credential was first held
		// back fail one after the other: one storm, one decrease. The
		// wait grows to cover the latest retry-after.
		if retryAfter > 0 {
			if u := now.Add(min(retryAfter, 10*time.Minute)); u.After(p.Until) {
				p.Until = u
			}
		}
		p.Hit = now
		return p
	}
	cur := running
	if active && p.LimitAt(now) < cur {
		cur = p.LimitAt(now)
	}
	limit := cur / 2
	if limit < 1 {
		limit = 1
	}
	hits := 1
	if active && now.Sub(p.Hit) < PaceMax {
		hits = p.Hits + 1
	}
	backoff := PaceBase
	for i := 1; i < hits && backoff < PaceMax; i++ {
		backoff *= 2
	}
	if backoff > PaceMax {
		backoff = PaceMax
	}
	if retryAfter > 0 {
		// The agent's word is the least wait; a long one is capped.
		backoff = min(retryAfter, 10*time.Minute)
	}
	if jitter < 0 || jitter >= 1 {
		jitter = 0
	}
	backoff += time.Duration(float64(backoff) * jitter / 2)
	return Pace{Limit: limit, Until: now.Add(backoff), Hit: now, Hits: hits}
}

// Jitter is a fraction in [0, 1) from a hash of the credential and the
// event's sequence number: random enough to spread retries, and the same
// whenever the journal is folded.
func Jitter(credential string, seq int64) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(credential + "#" + strconv.FormatInt(seq, 10)))
	return float64(h.Sum64()>>11) / float64(1<<53)
}

// NextPace is a credential's pace after the RateLimited event e, given its
// pace so far (ok: it has one), the agents running on it (the failed one
// among them) and its capacity. Its retry-after is e.Until; its jitter
// comes from the event's sequence number, so every fold of a journal
// computes the same pace. The engine schedules by it; views show it.
func NextPace(p Pace, ok bool, e *Event, cred string, running, capacity int) Pace {
	var retryAfter time.Duration
	if e.Until != nil && e.Until.After(e.Time) {
		retryAfter = e.Until.Sub(e.Time)
	}
	if ok && p.LimitAt(e.Time) >= capacity && !e.Time.Before(p.Until) {
		ok = false // recovered: a new storm starts afresh
	}
	return RateLimited(p, ok, e.Time, running, retryAfter, Jitter(cred, e.Seq))
}

// Holds reports whether the pace holds a credential of the given capacity
// with running agents back from another start at now, and until when to
// wait (the end of the backoff, or the next rise of the limit).
func (p Pace) Holds(now time.Time, running, capacity int) (bool, time.Time) {
	if now.Before(p.Until) {
		return true, p.Until
	}
	if lim := p.LimitAt(now); running >= lim && lim < capacity {
		return true, p.NextRaise(now)
	}
	return false, time.Time{}
}

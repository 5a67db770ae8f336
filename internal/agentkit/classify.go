package agentkit

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
)

// Classify turns what a failed invocation said into a classified error:
// status is an HTTP status the CLI reported (0: none), text its error
// messages and stderr, now the current time (for reset times). The message
// is text, bounded; the caller redacts it first.
func Classify(status, exitCode int, text string, now time.Time) *muster.AgentError {
	e := &muster.AgentError{Class: muster.FailExit, ExitCode: exitCode, Message: Clip(strings.TrimSpace(text), 1000)}
	low := strings.ToLower(text)
	if status == 0 {
		if m := statusRE().FindStringSubmatch(text); m != nil {
			status, _ = strconv.Atoi(m[1] + m[2])
		}
	}
	switch {
	case usageLimit(low):
		e.Class = muster.FailUsageLimit
		e.ResetAt = ResetTime(text, now)
	case status == 429 || (status == 0 && containsAny(low, "rate limit", "rate_limit", "ratelimit", "too many requests")):
		e.Class = muster.FailRateLimit
		e.RetryAfter = RetryAfter(text)
	case status == 401 || status == 403 || (status == 0 && containsAny(low, "unauthorized", "authentication", "invalid api key",
		"invalid x-api-key", "api key not valid", "invalid_api_key", "permission_denied", "forbidden", "/login", "not logged in",
		"invalid auth method", "api key is missing", "missing api key", "no api key")):
		e.Class = muster.FailAuth
	case status >= 500 || (status == 0 && containsAny(low, "overloaded", "api_error", "internal server error", "server error",
		"unavailable", "timed out", "timeout", "econnreset", "econnrefused", "connection", "network",
		"socket hang up", "stream disconnected", "high demand", "fetch failed", "temporarily")):
		e.Class = muster.FailTransient
	case status >= 400 || containsAny(low, "invalid_request", "invalid request", "not_found", "model not found",
		"prompt is too long", "context length", "context_length", "maximum context", "invalid model", "bad request"):
		e.Class = muster.FailInvalid
	}
	return e
}

func usageLimit(low string) bool {
	low = strings.ReplaceAll(low, "request a quota increase", "")
	if limitResetRE().MatchString(low) {
		return true
	}
	return containsAny(low, "usage limit", "usage_limit", "limit reached", "quota exceeded", "exceeded your current quota",
		"exhausted your capacity", "insufficient_quota", "credit balance", "out of credits", "billing", "session limit",
		"weekly limit", "daily limit", "hit your limit")
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

var (
	limitResetRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`limit[^.\n]{0,40}\breset`) })
	statusRE     = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:status(?: ?code)?|error|http|code)["':= ]*\b([45]\d\d)\b|\b([45]\d\d) (?:Too Many|Unauthorized|Forbidden|Internal|Bad|Service|Not Found|Overloaded)`)
	})
	retryAfterRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)retry[-_ ]?after["':= ]*\s*(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)?`)
	})
	tryInRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:try again|retry|retrying|resets?) in\s+((?:\d+(?:\.\d+)?\s*[a-z]+[\s,and]*)+)`)
	})
	retryMSRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)retry_delay_ms["':= ]*\s*(\d+)`) })
	durPartRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)`)
	})
	epochRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\|(\d{10})\b`) })
	clockRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:resets?|try again|available again|reset)(?: at)?\s+(\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([A-Za-z_]+/[A-Za-z_]+|UTC)\))?`)
	})
)

// RetryAfter reads a retry delay from an error text ("retry after 20",
// "try again in 1m30s", "retry_delay_ms: 500"); 0 when none is stated.
func RetryAfter(text string) time.Duration {
	if m := retryMSRE().FindStringSubmatch(text); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return time.Duration(n) * time.Millisecond
	}
	if m := retryAfterRE().FindStringSubmatch(text); m != nil {
		return unitDur(m[1], m[2])
	}
	if m := tryInRE().FindStringSubmatch(text); m != nil {
		return sumDur(m[1])
	}
	return 0
}

func sumDur(s string) time.Duration {
	var d time.Duration
	for _, p := range durPartRE().FindAllStringSubmatch(s, -1) {
		d += unitDur(p[1], p[2])
	}
	return d
}

func unitDur(num, unit string) time.Duration {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0
	}
	u := strings.ToLower(unit)
	var base time.Duration
	switch {
	case u == "ms" || strings.HasPrefix(u, "milli"):
		base = time.Millisecond
	case u == "" || u == "s" || strings.HasPrefix(u, "sec"):
		base = time.Second
	case u == "m" || strings.HasPrefix(u, "min"):
		base = time.Minute
	case u == "h" || strings.HasPrefix(u, "h"):
		base = time.Hour
	case u == "d" || strings.HasPrefix(u, "day"):
		base = 24 * time.Hour
	}
	return time.Duration(f * float64(base))
}

// ResetTime reads when a usage limit resets: a Unix time after "|"
// (Claude's "usage limit reached|1767225600"), a delay ("try again in 2
// days 3 hours"), or a clock time ("resets 8:20am (Europe/Rome)", rolled to
// the next day when already past, in the stated zone or UTC). Zero when none.
func ResetTime(text string, now time.Time) time.Time {
	if m := epochRE().FindStringSubmatch(text); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return time.Unix(n, 0).UTC()
	}
	if m := tryInRE().FindStringSubmatch(text); m != nil {
		if d := sumDur(m[1]); d > 0 {
			return now.Add(d).UTC()
		}
	}
	if m := clockRE().FindStringSubmatch(text); m != nil {
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		switch strings.ToLower(m[3]) {
		case "pm":
			if h < 12 {
				h += 12
			}
		case "am":
			if h == 12 {
				h = 0
			}
		}
		if h > 23 || mi > 59 {
			return time.Time{}
		}
		loc := time.UTC
		if m[4] != "" {
			if l, err := time.LoadLocation(m[4]); err == nil {
				loc = l
			}
		}
		n := now.In(loc)
		t := time.Date(n.Year(), n.Month(), n.Day(), h, mi, 0, 0, loc)
		if !t.After(n) {
			t = t.AddDate(0, 0, 1)
		}
		return t.UTC()
	}
	return time.Time{}
}

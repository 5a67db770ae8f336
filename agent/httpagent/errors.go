package httpagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	muster "github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/redact"
)

// classify turns a non-2xx reply into a classified failure:
//
//	429 (or a usage-limit message)  rate_limit, or usage_limit with ResetAt
//	500 502 503 504 529             transient
//	401 403                         auth
//	400 404 413 422, other 4xx      invalid
func classify(name string, status int, h http.Header, body []byte, now time.Time) *muster.AgentError {
	msg, typ := errorMessage(body)
	if msg == "" {
		msg = http.StatusText(status)
	}
	ae := &muster.AgentError{Message: fmt.Sprintf("executor %s: HTTP %d: %s", name, status, truncate(msg, 500))}
	switch {
	case isUsageLimit(msg + " " + typ):
		ae.Class = muster.FailUsageLimit
		ae.ResetAt = resetAt(h, msg, now)
	case status == http.StatusTooManyRequests:
		ae.Class = muster.FailRateLimit
		ae.RetryAfter = retryAfter(h, now)
	case status == 529 || status == 500 || status == 502 || status == 503 || status == 504 || status == 408:
		ae.Class = muster.FailTransient
		ae.RetryAfter = retryAfter(h, now)
	case status == 401 || status == 403:
		ae.Class = muster.FailAuth
	default:
		ae.Class = muster.FailInvalid
	}
	return ae
}

// streamError classifies an error reported inside a 200 stream.
func streamError(typ, msg string) *muster.AgentError {
	ae := &muster.AgentError{Message: "stream error: " + truncate(msg, 500)}
	if typ != "" {
		ae.Message = "stream error " + typ + ": " + truncate(msg, 500)
	}
	t := strings.ToLower(typ)
	switch {
	case isUsageLimit(msg + " " + typ):
		ae.Class = muster.FailUsageLimit
	case strings.Contains(t, "rate_limit") || strings.Contains(t, "rate-limit"):
		ae.Class = muster.FailRateLimit
	case strings.Contains(t, "overloaded") || strings.Contains(t, "api_error") || strings.Contains(t, "server") ||
		strings.Contains(t, "unavailable") || t == "":
		ae.Class = muster.FailTransient
	case strings.Contains(t, "auth") || strings.Contains(t, "permission"):
		ae.Class = muster.FailAuth
	default:
		ae.Class = muster.FailInvalid
	}
	return ae
}

// errorMessage reads the message and type of the APIs' error bodies:
// {"error":{"message","type"}}, {"type":"error","error":{...}},
// {"error":{"message","status"}} (Gemini), {"error":"text"}, {"message"}.
func errorMessage(body []byte) (msg, typ string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  string          `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
			Status  string `json:"status"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			typ = inner.Type
			if typ == "" {
				typ = inner.Status
			}
			if c, ok := inner.Code.(string); ok && typ == "" {
				typ = c
			}
			return inner.Message, typ
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s, ""
		case v.Message != "":
			return v.Message, ""
		case v.Detail != "":
			return v.Detail, ""
		}
	}
	return strings.TrimSpace(truncate(string(body), 500)), ""
}

var usageLimitRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)usage limit|insufficient_quota|exceeded your current quota|quota exceeded|limit will reset|credit balance is too low|billing_hard_limit`)
})

func isUsageLimit(s string) bool { return usageLimitRE().MatchString(s) }

var rfc3339RE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)`)
})

// resetAt finds when a usage limit resets: a reset header (unix seconds
// or RFC 3339), a time in the message, or Retry-After from now.
func resetAt(h http.Header, msg string, now time.Time) time.Time {
	for _, k := range []string{"anthropic-ratelimit-unified-reset", "x-ratelimit-reset", "x-usage-reset", "x-ratelimit-reset-requests"} {
		v := strings.TrimSpace(h.Get(k))
		if v == "" {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 1e9 {
			return time.Unix(n, 0).UTC()
		}
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t
		}
	}
	if m := rfc3339RE().FindString(msg); m != "" {
		if t, err := time.Parse(time.RFC3339, m); err == nil {
			return t
		}
	}
	if d := retryAfter(h, now); d > 0 {
		return now.Add(d)
	}
	return time.Time{}
}

// retryAfter reads Retry-After (seconds or an HTTP date) or
// retry-after-ms.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Redact removes key and anything shaped like an API key or a URL's
// user-info from s (internal/redact).
func Redact(s, key string) string {
	return redact.New(key).String(s)
}

func redactErr(err error, key string) error {
	var ae *muster.AgentError
	if errors.As(err, &ae) {
		c := *ae
		c.Message = Redact(c.Message, key)
		return &c
	}
	return errors.New(Redact(err.Error(), key))
}

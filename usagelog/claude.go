package usagelog

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Skip reasons, as counted in Stats.Skipped.
const (
	SkipNoUsage      = "no usage"         // no `"usage":{` in the line (user lines, tool output, ...)
	SkipInvalidJSON  = "invalid json"     // not one well-formed JSON object
	SkipNotUsage     = "not a usage line" // has a usage object but not the fields of a usage record
	SkipNull         = "null field"       // a needed field is null
	SkipBadTokens    = "bad token count"  // a token count that is not a non-negative integer
	SkipBadTimestamp = "bad timestamp"    // missing or not RFC 3339 with a zone
	SkipInvalid      = "invalid entry"    // empty ids or model, or a version that is not x.y.z
	SkipOverlong     = "overlong line"    // longer than the line limit
	SkipDuplicate    = "duplicate"        // the same API message seen again (counted after de-duplication)
)

var usageMarker = []byte(`"usage":{`)

// claudeLine is what one Claude Code log line says about usage. Byte
// slices point into the read buffer and are valid only while the line is.
type claudeLine struct {
	timestamp []byte
	msgID     []byte
	hasMsgID  bool
	reqID     []byte
	hasReqID  bool
	model     []byte
	hasModel  bool
	session   []byte
	hasSess   bool
	version   []byte
	hasVer    bool
	costUSD   float64
	hasCost   bool
	sidechain bool

	input, output, cacheWrite, cacheRead int64
	eph1h, eph5m                         int64
	hasCacheWrite, hasEph                bool
	fast                                 bool

	hasMessage, hasUsage, hasTS bool
	hasInput, hasOutput         bool
}

// parseClaudeLine reads line into l. It returns "" when the line is a
// usage record, else the skip reason. Lines without the compact
// `"usage":{` marker are not parsed at all (ccusage does the same, so
// pretty-printed lines are not counted by either).
func parseClaudeLine(line []byte, l *claudeLine) string {
	if !bytes.Contains(line, usageMarker) {
		return SkipNoUsage
	}
	*l = claudeLine{}
	w := walker{b: line}
	reason := ""
	var progress claudeLine
	hasProgress := false
	seen := 0
	const (
		sMessage = 1 << iota
		sReq
		sTS
		sSess
		sVer
		sCost
		sSide
		sData
	)
	once := func(bit int) bool {
		if seen&bit != 0 {
			return false // duplicate field: strict decoders reject the line
		}
		seen |= bit
		return true
	}
	ok := w.object(func(key []byte) bool {
		switch string(key) {
		case "message":
			if !once(sMessage) {
				return false
			}
			if w.null() {
				reason = SkipNull
				return true
			}
			if w.peek() != '{' {
				return false
			}
			l.hasMessage = true
			return parseMessage(&w, l, &reason)
		case "requestId":
			if !once(sReq) {
				return false
			}
			return optString(&w, &l.reqID, &l.hasReqID, &reason)
		case "timestamp":
			if !once(sTS) {
				return false
			}
			l.hasTS = true
			return optString(&w, &l.timestamp, &l.hasTS, &reason)
		case "sessionId":
			if !once(sSess) {
				return false
			}
			return optString(&w, &l.session, &l.hasSess, &reason)
		case "version":
			if !once(sVer) {
				return false
			}
			return optString(&w, &l.version, &l.hasVer, &reason)
		case "costUSD":
			if !once(sCost) {
				return false
			}
			if w.null() {
				reason = SkipNull
				return true
			}
			v, ok := w.number()
			l.costUSD, l.hasCost = v, ok
			return ok
		case "isSidechain":
			if !once(sSide) {
				return false
			}
			if w.null() {
				return true
			}
			v, ok := w.boolean()
			l.sidechain = v
			return ok
		case "data":
			if !once(sData) {
				return false
			}
			if w.peek() != '{' {
				return w.skip()
			}
			var r string
			ok := parseProgress(&w, &progress, &r)
			if ok && r == "" && progress.hasMessage {
				hasProgress = true
			}
			return ok
		default:
			return w.skip()
		}
	})
	if !ok || !w.end() {
		return SkipInvalidJSON
	}
	if !l.hasMessage && hasProgress {
		// An agent progress line: a sub-agent's message nested under data.message.
		sess, hasSess := l.session, l.hasSess
		*l = progress
		l.session, l.hasSess = sess, hasSess
		l.version, l.hasVer = nil, false
	}
	if reason != "" {
		return reason
	}
	if !l.hasMessage || !l.hasUsage || !l.hasTS || !l.hasInput || !l.hasOutput {
		return SkipNotUsage
	}
	if !l.hasCacheWrite && l.hasEph {
		l.cacheWrite = l.eph1h + l.eph5m
	}
	if (l.hasVer && !semverPrefix(l.version)) || (l.hasSess && len(l.session) == 0) ||
		(l.hasReqID && len(l.reqID) == 0) || (l.hasMsgID && len(l.msgID) == 0) ||
		(l.hasModel && len(l.model) == 0) {
		return SkipInvalid
	}
	return ""
}

// parseProgress reads data of an agent progress line:
// {"message":{"timestamp":..,"requestId":..,"isSidechain":..,"costUSD":..,"message":{..usage..}}}.
func parseProgress(w *walker, l *claudeLine, reason *string) bool {
	return w.object(func(key []byte) bool {
		if string(key) != "message" || w.peek() != '{' {
			return w.skip()
		}
		return w.object(func(key []byte) bool {
			switch string(key) {
			case "message":
				if w.peek() != '{' {
					return w.skip()
				}
				l.hasMessage = true
				return parseMessage(w, l, reason)
			case "timestamp":
				return optString(w, &l.timestamp, &l.hasTS, reason)
			case "requestId":
				return optString(w, &l.reqID, &l.hasReqID, reason)
			case "costUSD":
				if w.null() {
					*reason = SkipNull
					return true
				}
				v, ok := w.number()
				l.costUSD, l.hasCost = v, ok
				return ok
			case "isSidechain":
				if w.null() {
					return true
				}
				v, ok := w.boolean()
				l.sidechain = v
				return ok
			default:
				return w.skip()
			}
		})
	})
}

func parseMessage(w *walker, l *claudeLine, reason *string) bool {
	return w.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return optString(w, &l.msgID, &l.hasMsgID, reason)
		case "model":
			return optString(w, &l.model, &l.hasModel, reason)
		case "usage":
			if w.null() {
				*reason = SkipNull
				return true
			}
			if w.peek() != '{' {
				return false
			}
			l.hasUsage = true
			return parseUsage(w, l, reason)
		default:
			return w.skip()
		}
	})
}

func parseUsage(w *walker, l *claudeLine, reason *string) bool {
	num := func(dst *int64, has *bool) bool {
		if w.null() {
			*reason = SkipNull
			return true
		}
		v, ok := w.uint()
		if !ok {
			if *reason == "" {
				*reason = SkipBadTokens
			}
			return w.skip()
		}
		*dst = v
		if has != nil {
			*has = true
		}
		return true
	}
	return w.object(func(key []byte) bool {
		switch string(key) {
		case "input_tokens":
			return num(&l.input, &l.hasInput)
		case "output_tokens":
			return num(&l.output, &l.hasOutput)
		case "cache_creation_input_tokens":
			return num(&l.cacheWrite, &l.hasCacheWrite)
		case "cache_read_input_tokens":
			return num(&l.cacheRead, nil)
		case "speed":
			if w.peek() == '"' {
				s, _, ok := w.str()
				l.fast = ok && string(s) == "fast"
				return ok
			}
			return w.skip()
		case "cache_creation":
			if w.peek() != '{' {
				return w.skip()
			}
			return w.object(func(key []byte) bool {
				switch string(key) {
				case "ephemeral_1h_input_tokens":
					return num(&l.eph1h, &l.hasEph)
				case "ephemeral_5m_input_tokens":
					return num(&l.eph5m, &l.hasEph)
				}
				return w.skip()
			})
		default:
			return w.skip()
		}
	})
}

// optString reads a string field; null marks the line as skipped.
func optString(w *walker, dst *[]byte, has *bool, reason *string) bool {
	if w.null() {
		*reason = SkipNull
		return true
	}
	s, esc, ok := w.str()
	if !ok {
		return false
	}
	if esc {
		var out string
		if err := json.Unmarshal(w.b[w.i-len(s)-2:w.i], &out); err != nil {
			return false
		}
		s = []byte(out)
	}
	*dst, *has = s, true
	return true
}

// semverPrefix reports whether v starts with digits.digits.digits.
func semverPrefix(v []byte) bool {
	parts := 0
	i := 0
	for parts < 3 {
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
		parts++
		if parts < 3 {
			if i >= len(v) || v[i] != '.' {
				return false
			}
			i++
		}
	}
	return true
}

func parseFloat(b []byte) (float64, bool) {
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}

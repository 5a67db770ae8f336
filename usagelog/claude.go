package usagelog

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/muster-run/muster"
)

// Skip reasons, as counted in Stats.Skipped.
const (
	SkipNoUsage      = "no usage"         // no `"usage":{` in the line (user lines, tool output, ...)
	SkipInvalidJSON  = "invalid json"     // not one well-formed JSON object
	SkipNotUsage     = "not a usage line" // has a usage object but not the fields of a usage record
	SkipNull         = "null field"       // a needed field is null
	SkipBadTokens    = "bad token count"  // a token count that is not a non-negative integer of at most muster.MaxRecordTokens
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
	p := &lineParse{w: walker{b: line}, l: l}
	if !p.w.object(p.field) || !p.w.end() {
		return SkipInvalidJSON
	}
	if !l.hasMessage && p.hasProgress {
		// An agent progress line: a sub-agent's message nested under data.message.
		sess, hasSess := l.session, l.hasSess
		*l = p.progress
		l.session, l.hasSess = sess, hasSess
		l.version, l.hasVer = nil, false
	}
	if p.reason != "" {
		return p.reason
	}
	return l.check()
}

// check says why a parsed line is not a usage record, or "".
func (l *claudeLine) check() string {
	if !l.hasMessage || !l.hasUsage || !l.hasTS || !l.hasInput || !l.hasOutput {
		return SkipNotUsage
	}
	if !l.hasCacheWrite && l.hasEph {
		l.cacheWrite = l.eph1h + l.eph5m
	}
	for _, n := range []int64{l.input, l.output, l.cacheWrite, l.cacheRead, l.eph1h, l.eph5m} {
		if n > muster.MaxRecordTokens {
			return SkipBadTokens // no message uses that many: a log an agent wrote
		}
	}
	if (l.hasVer && !semverPrefix(l.version)) || (l.hasSess && len(l.session) == 0) ||
		(l.hasReqID && len(l.reqID) == 0) || (l.hasMsgID && len(l.msgID) == 0) ||
		(l.hasModel && len(l.model) == 0) {
		return SkipInvalid
	}
	return ""
}

// lineParse is the state of parseClaudeLine's walk over one line's
// top-level object.
type lineParse struct {
	w           walker
	l           *claudeLine
	reason      string     // the first skip reason met
	progress    claudeLine // data.message of an agent progress line
	hasProgress bool
	seen        int // the top-level fields met, one bit each
}

// The top-level fields of a line, one bit each in lineParse.seen.
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

// once marks a field seen; false when it was already (a duplicate field:
// strict decoders reject the line).
func (p *lineParse) once(bit int) bool {
	if p.seen&bit != 0 {
		return false
	}
	p.seen |= bit
	return true
}

// field reads the value of one top-level key; false when the line is not
// well-formed JSON or repeats the key.
func (p *lineParse) field(key []byte) bool {
	w, l := &p.w, p.l
	switch string(key) {
	case "message":
		if !p.once(sMessage) {
			return false
		}
		if w.null() {
			p.reason = SkipNull
			return true
		}
		if w.peek() != '{' {
			return false
		}
		l.hasMessage = true
		return parseMessage(w, l, &p.reason)
	case "requestId":
		return p.once(sReq) && optString(w, &l.reqID, &l.hasReqID, &p.reason)
	case "timestamp":
		if !p.once(sTS) {
			return false
		}
		l.hasTS = true
		return optString(w, &l.timestamp, &l.hasTS, &p.reason)
	case "sessionId":
		return p.once(sSess) && optString(w, &l.session, &l.hasSess, &p.reason)
	case "version":
		return p.once(sVer) && optString(w, &l.version, &l.hasVer, &p.reason)
	case "costUSD":
		return p.once(sCost) && p.cost()
	case "isSidechain":
		if !p.once(sSide) {
			return false
		}
		if w.null() {
			return true
		}
		v, ok := w.boolean()
		l.sidechain = v
		return ok
	case "data":
		return p.once(sData) && p.data()
	default:
		return w.skip()
	}
}

func (p *lineParse) cost() bool {
	if p.w.null() {
		p.reason = SkipNull
		return true
	}
	v, ok := p.w.number()
	p.l.costUSD, p.l.hasCost = v, ok
	return ok
}

// data reads the data object of an agent progress line.
func (p *lineParse) data() bool {
	if p.w.peek() != '{' {
		return p.w.skip()
	}
	var r string
	ok := parseProgress(&p.w, &p.progress, &r)
	if ok && r == "" && p.progress.hasMessage {
		p.hasProgress = true
	}
	return ok
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

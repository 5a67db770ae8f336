package usagelog

import "bytes"

// walker is a minimal JSON reader over one line. It reads only the
// values it is asked for and skips the rest without decoding them:
// strings are skipped with IndexByte, so long text and tool output cost
// little. It checks structure (brackets, commas, colons, string ends),
// enough to reject truncated or concatenated lines.
type walker struct {
	b []byte
	i int
}

func (w *walker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\r', '\n':
			w.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (w *walker) peek() byte {
	w.ws()
	if w.i >= len(w.b) {
		return 0
	}
	return w.b[w.i]
}

func (w *walker) consume(c byte) bool {
	if w.peek() != c {
		return false
	}
	w.i++
	return true
}

// str reads a string and returns its raw bytes (escapes not decoded) and
// whether it had escapes.
func (w *walker) str() (s []byte, escaped bool, ok bool) {
	if !w.consume('"') {
		return nil, false, false
	}
	start := w.i
	for {
		j := bytes.IndexByte(w.b[w.i:], '"')
		if j < 0 {
			return nil, false, false
		}
		end := w.i + j
		// count backslashes before the quote
		n := 0
		for k := end - 1; k >= start && w.b[k] == '\\'; k-- {
			n++
		}
		if n > 0 {
			escaped = true
		}
		w.i = end + 1
		if n%2 == 0 {
			if !escaped && bytes.IndexByte(w.b[start:end], '\\') >= 0 {
				escaped = true
			}
			return w.b[start:end], escaped, true
		}
	}
}

// null consumes a literal null.
func (w *walker) null() bool {
	if w.peek() == 'n' && bytes.HasPrefix(w.b[w.i:], []byte("null")) {
		w.i += 4
		return true
	}
	return false
}

// uint reads a non-negative integer. ok is false for anything else
// (floats, exponents, signs, strings), as a strict u64 decoder would.
func (w *walker) uint() (v int64, ok bool) {
	w.ws()
	start := w.i
	for w.i < len(w.b) && w.b[w.i] >= '0' && w.b[w.i] <= '9' {
		if w.i-start >= 18 {
			return 0, false
		}
		v = v*10 + int64(w.b[w.i]-'0')
		w.i++
	}
	if w.i == start {
		return 0, false
	}
	if w.i < len(w.b) {
		switch w.b[w.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return v, true
}

// number reads a JSON number as float64.
func (w *walker) number() (float64, bool) {
	w.ws()
	start := w.i
	for w.i < len(w.b) {
		c := w.b[w.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			w.i++
			continue
		}
		break
	}
	if w.i == start {
		return 0, false
	}
	return parseFloat(w.b[start:w.i])
}

// boolean reads true or false.
func (w *walker) boolean() (bool, bool) {
	switch w.peek() {
	case 't':
		if bytes.HasPrefix(w.b[w.i:], []byte("true")) {
			w.i += 4
			return true, true
		}
	case 'f':
		if bytes.HasPrefix(w.b[w.i:], []byte("false")) {
			w.i += 5
			return false, true
		}
	}
	return false, false
}

// skip skips one value of any kind.
func (w *walker) skip() bool {
	switch w.peek() {
	case '"':
		_, _, ok := w.str()
		return ok
	case '{', '[':
		return w.skipNested()
	case 't', 'f':
		_, ok := w.boolean()
		return ok
	case 'n':
		return w.null()
	case 0:
		return false
	default:
		_, ok := w.number()
		return ok
	}
}

// skipNested skips an object or array, tracking depth and jumping over
// strings.
func (w *walker) skipNested() bool {
	depth := 0
	for w.i < len(w.b) {
		c := w.b[w.i]
		switch c {
		case '"':
			if _, _, ok := w.str(); !ok {
				return false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				w.i++
				return true
			}
		}
		w.i++
	}
	return false
}

// object iterates over an object's members, calling fn with each key and
// the walker positioned at the value; fn must consume the value. It
// returns false on malformed input or when fn returns false.
func (w *walker) object(fn func(key []byte) bool) bool {
	if !w.consume('{') {
		return false
	}
	if w.consume('}') {
		return true
	}
	for {
		key, _, ok := w.str()
		if !ok || !w.consume(':') {
			return false
		}
		if !fn(key) {
			return false
		}
		switch w.peek() {
		case ',':
			w.i++
		case '}':
			w.i++
			return true
		default:
			return false
		}
	}
}

// end reports whether only white space is left.
func (w *walker) end() bool {
	w.ws()
	return w.i == len(w.b)
}

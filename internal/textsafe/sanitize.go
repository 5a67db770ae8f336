package textsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize makes untrusted text (an agent's message, a task title, tool
// arguments) safe to print on a terminal: it removes escape sequences (CSI,
// OSC, DCS and the like, 7-bit and 8-bit forms) and other control
// characters, turns line breaks and tabs into spaces and drops invalid
// UTF-8. The result is a single line.
func Sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			if s[i] == 0x9b { // a raw 8-bit CSI byte
				i = skipCSI(s, i+1)
				continue
			}
			i++
			continue
		}
		switch {
		case r == 0x1b: // ESC
			i = skipEscape(s, i+size)
			continue
		case r == 0x9b: // 8-bit CSI
			i = skipCSI(s, i+size)
			continue
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // 8-bit OSC, DCS, SOS, PM, APC
			i = skipString(s, i+size)
			continue
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// CR LF is one line break.
		case r == '\n' || r == '\r' || r == '\t' || r == '\v' || r == '\f':
			b.WriteByte(' ')
		case unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || isBidi(r):
			// dropped
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// isBidi reports bidirectional overrides, which can make text read
// differently from what it is.
func isBidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// skipEscape returns the index after the escape sequence whose ESC ended
// just before i.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// Two-byte or nF sequences: intermediates 0x20-0x2f, then one final byte.
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) {
		i++
	}
	return i
}

// skipCSI skips parameter and intermediate bytes and the final byte.
func skipCSI(s string, i int) int {
	for i < len(s) {
		c := s[i]
		i++
		if c >= 0x40 && c <= 0x7e {
			return i
		}
		if c < 0x20 || c > 0x3f && c < 0x40 {
			return i
		}
	}
	return i
}

// skipString skips a control string up to BEL or ST (ESC \ or 0x9c).
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + len("\u009c")
		}
		i++
	}
	return i
}

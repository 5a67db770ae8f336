// Package textsafe makes untrusted text safe to show and bounded to keep:
// Sanitize strips terminal control sequences, Clip and ClipBytes cut by
// rune (never inside a UTF-8 sequence), Tail keeps the end, OneLine and
// FirstLine fold text onto a line, and Short abbreviates a commit id. Every
// view, report, prompt and message uses these, so two places never cut
// the same text two ways.
package textsafe

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis marks a cut.
const Ellipsis = "…"

// ShortLen is how many hex digits of a commit id people are shown.
const ShortLen = 10

// Short abbreviates a commit id to ShortLen digits.
func Short(sha string) string {
	if len(sha) > ShortLen {
		return sha[:ShortLen]
	}
	return sha
}

// Clip cuts s to at most n runes, the last of them Ellipsis when it cut.
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return s[:i] + Ellipsis
}

// ClipBytes cuts s to at most n bytes, on a rune boundary, and marks the
// cut with Ellipsis (which the n bytes include).
func ClipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len(Ellipsis)
	if cut <= 0 {
		return ""
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Ellipsis
}

// Tail keeps the last n bytes of s, on a rune boundary, marking the cut
// with a leading Ellipsis (which the n bytes include).
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	from := len(s) - n + len(Ellipsis)
	if from >= len(s) {
		return Ellipsis
	}
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return Ellipsis + s[from:]
}

// OneLine folds every run of white space, line breaks included, into one
// space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// FirstLine returns the first non-empty line of s, trimmed and cut to n
// bytes.
func FirstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return ClipBytes(strings.TrimSpace(s), n)
}

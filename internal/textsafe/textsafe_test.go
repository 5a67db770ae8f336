package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

func TestCutsNeverSplitARune(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.RuneFrom([]rune("aé€😀\n "))).Draw(t, "s")
		n := rapid.IntRange(0, 40).Draw(t, "n")
		for name, got := range map[string]string{"Clip": Clip(s, n), "ClipBytes": ClipBytes(s, n), "Tail": Tail(s, n), "FirstLine": FirstLine(s, n)} {
			if !utf8.ValidString(got) {
				t.Fatalf("%s(%q, %d) = %q: invalid UTF-8", name, s, n, got)
			}
		}
		if c := Clip(s, n); utf8.RuneCountInString(c) > n {
			t.Fatalf("Clip(%q, %d) = %q: %d runes", s, n, c, utf8.RuneCountInString(c))
		}
		if c := ClipBytes(s, n); len(c) > max(n, 0) {
			t.Fatalf("ClipBytes(%q, %d) = %q: %d bytes", s, n, c, len(c))
		}
		if c := Tail(s, n); len(c) > max(n, len(Ellipsis)) {
			t.Fatalf("Tail(%q, %d) = %q: %d bytes", s, n, c, len(c))
		}
		if len(s) <= n && (ClipBytes(s, n) != s || Tail(s, n) != s) {
			t.Fatalf("cut a short string")
		}
	})
}

func TestExamples(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want string }{
		{Clip("héllo world", 5), "héll…"},
		{Clip("héllo", 5), "héllo"},
		{ClipBytes("héllo", 5), "h…"},
		{Tail("hello world", 6), "…rld"},
		{OneLine(" a\n b\t c "), "a b c"},
		{FirstLine("\n  first \nsecond", 100), "first"},
		{Short("0123456789abcdef"), "0123456789"},
		{Short("abc"), "abc"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if strings.Contains(Sanitize("a\x1b[31mred\x1b[0m\nb"), "\x1b") {
		t.Error("escape kept")
	}
}

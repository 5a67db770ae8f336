package pr

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestEscapeMDNeutralises(t *testing.T) {
	for in, bad := range map[string][]string{
		"ping @octocat and @org/team":        {"@octocat", "@org"},
		"fixes #12 and owner/repo#3, GH-7":   {"#12", "#3", "GH-7"},
		"<!-- hide --> <img src=x>":          {"<!--", "<img"},
		"a | b\nc":                           {" | ", "\n"},
		"[link](https://evil.example) `x` *": {"](", "`x`"},
	} {
		out := escapeMD(in)
		for _, b := range bad {
			if strings.Contains(out, b) {
				t.Errorf("escapeMD(%q) = %q still holds %q", in, out, b)
			}
		}
	}
}

// What GitHub would act on: a mention, a reference, raw HTML, a line
// break that leaves a table cell, an unescaped pipe.
var actionable = regexp.MustCompile(`(?i)@[a-z0-9]|#[0-9]|\bgh-[0-9]|<|\n|\r|(^|[^\\])\|`)

func TestEscapeMDProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.SampledFrom([]rune("@#|<>\n\r\\`*_ghGH-0123abc/ \u200b"))).Draw(t, "s")
		if out := escapeMD(s); actionable.MatchString(out) {
			t.Fatalf("escapeMD(%q) = %q is still actionable", s, out)
		}
	})
}

func TestSlugOf(t *testing.T) {
	for url, want := range map[string]string{
		"https://github.com/octo/app.git":         "octo/app",
		"https://github.com/octo/app":             "octo/app",
		"https://user@ghe.example/octo/app.git/":  "octo/app",
		"git@github.com:octo/app.git":             "octo/app",
		"ssh://git@github.com:22/octo/my.app.git": "octo/my.app",
		"/srv/git/app.git":                        "",
		"https://github.com/only":                 "",
	} {
		if got := slugOf(url); got != want {
			t.Errorf("slugOf(%q) = %q, want %q", url, got, want)
		}
	}
}

func TestAskPass(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == AskPassTokenEnv {
				return v
			}
			return ""
		}
	}
	var out bytes.Buffer
	if !AskPass([]string{"muster", "Password for 'https://x-access-token@github.com': "}, env("tok"), &out) || out.String() != "tok\n" {
		t.Errorf("password: %q", out.String())
	}
	out.Reset()
	if !AskPass([]string{"muster", "Username for 'https://github.com': "}, env("tok"), &out) || out.String() != "x-access-token\n" {
		t.Errorf("user: %q", out.String())
	}
	// Not as askpass: muster runs as itself.
	for _, args := range [][]string{{"muster", "run"}, {"muster", "Password for x", "extra"}} {
		if AskPass(args, env("tok"), &out) {
			t.Errorf("AskPass(%q) answered", args)
		}
	}
	if AskPass([]string{"muster", "Password for x"}, env(""), &out) {
		t.Error("AskPass answered without a token")
	}
}

// A pull request's title is untrusted (the plan's title): no escape
// sequence, control character or bidirectional override gets into it,
// as none gets into the body.
func TestOneLineSanitises(t *testing.T) {
	in := "evil \x1b[31mred\x1b[0m \u202etxet\u202c \a bell \x1b]8;;http://x\x07link\x1b]8;;\x07 @octocat"
	out := oneLine(in, 200)
	for _, bad := range []string{"\x1b", "\u202e", "\u202c", "\a", "http://x", "@octocat"} {
		if strings.Contains(out, bad) {
			t.Errorf("oneLine(%q) = %q still holds %q", in, out, bad)
		}
	}
	if !strings.Contains(out, "red") || !strings.Contains(out, "link") {
		t.Errorf("oneLine(%q) = %q lost the text", in, out)
	}
}

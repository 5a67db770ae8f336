package usagelog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// TestReportShowsNoControlSequence: the model names and session ids of a
// report come from logs an agent wrote (muster usage reads the agent
// homes of muster's runs). Escape sequences, control characters and
// bidirectional overrides in them never reach the terminal, in the text
// report (where a long name is cut too) or in the JSON one.
func TestReportShowsNoControlSequence(t *testing.T) {
	evil := "evil\x1b[31mRED\x1b]0;pwned\x07\u202e\u009b2J" + strings.Repeat("x", 5000)
	res := &Result{Source: "claude", Entries: []Entry{
		{Time: 1767866400000, Session: "s\x1b[2Jx", Model: evil, Usage: muster.Usage{InputTokens: 100, OutputTokens: 10}, Unpriced: true},
	}}
	for _, kind := range []string{Daily, Session} {
		rep, err := Aggregate(res, kind, Filter{}, true)
		if err != nil {
			t.Fatal(err)
		}
		var text, js bytes.Buffer
		if err := rep.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		for name, out := range map[string]string{"text": text.String(), "json": js.String()} {
			if strings.ContainsAny(out, "\x1b\x07\u202e\u009b") {
				t.Errorf("%s %s report holds a control sequence: %q", kind, name, out)
			}
		}
		if text.Len() > 4000 {
			t.Errorf("%s text report is %d bytes: a long name is shown whole", kind, text.Len())
		}
	}
}

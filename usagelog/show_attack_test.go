package usagelog

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
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

// TestHostileCountsStayBounded: a session log an agent wrote claims a
// negative cost, a cost past what int64 nano-dollars hold, and token
// counts whose sum (and price) overflow int64. An impossible cost is not
// taken (the tokens are priced instead); a count past what one message
// can use skips its line.
func TestHostileCountsStayBounded(t *testing.T) {
	line := func(id, cost string, tokens string) string {
		return `{"message":{"id":"` + id + `","model":"claude-opus-4-5","usage":{"input_tokens":` + tokens +
			`,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},"requestId":"r` + id +
			`","type":"assistant","timestamp":"2026-01-08T10:00:00.000Z","sessionId":"s","version":"2.1.0"` + cost + "}\n"
	}
	scan := func(log string) Totals {
		dir := t.TempDir()
		p := filepath.Join(dir, "projects", "p", "s.jsonl")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(log), 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := ScanClaude(context.Background(), Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Aggregate(res, Daily, Filter{}, true)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Totals
	}
	costs := scan(line("neg", `,"costUSD":-1000`, "1000") + line("inf", `,"costUSD":1e300`, "1000"))
	if costs.CostMicros <= 0 || costs.CostMicros > 1_000_000 || !costs.Estimated {
		t.Errorf("a negative and an overflowing cost: %+v, want the tokens' estimate", costs)
	}
	var b strings.Builder
	for i := 0; i < 20; i++ {
		b.WriteString(line(fmt.Sprintf("big%d", i), "", "999999999999999999"))
	}
	b.WriteString(line("ok", "", "1000"))
	if big := scan(b.String()); big.InputTokens != 1000 || big.CostMicros <= 0 || big.CostMicros > 1_000_000 {
		t.Errorf("counts past a record's bound: %+v, want only the honest line", big)
	}
}

// TestCodexHugeCountsPriceWithoutWrapping: a Codex rollout an agent wrote
// claims a total of 999,999,999,999,999,999 input tokens for a priced
// model: its estimate saturates, never wraps into a negative cost.
func TestCodexHugeCountsPriceWithoutWrapping(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sessions", "2026", "11", "29", "rollout-2026-11-29T10-00-00-x.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	log := `{"timestamp":"2026-11-29T10:00:00.100Z","type":"turn_context","payload":{"model":"gpt-5.5"}}` + "\n" +
		`{"timestamp":"2026-11-29T10:00:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":999999999999999999,"cached_input_tokens":0,"output_tokens":999999999999999999,"total_tokens":999999999999999999}}}}` + "\n"
	if err := os.WriteFile(p, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := ScanCodex(context.Background(), Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Aggregate(res, Daily, Filter{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.CostMicros < 0 || (rep.Totals.InputTokens > 0 && rep.Totals.CostMicros == 0) {
		t.Errorf("huge counts priced as %+v", rep.Totals)
	}
}

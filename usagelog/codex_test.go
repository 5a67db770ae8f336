package usagelog_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/muster-run/muster/usagelog"
)

func TestCodexCumulativeDifferences(t *testing.T) {
	t.Parallel()
	// testdata/codex: a thread of 19 468 input tokens, a repeated total,
	// then a resumed request reaching 29 581 cumulative input of which
	// 10 113 cached (ccusage 20.0.24 reports the same figures).
	res, err := usagelog.ScanCodex(context.Background(), usagelog.Options{Dir: "testdata/codex"})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := usagelog.Aggregate(res, usagelog.Daily, usagelog.Filter{TZ: time.UTC}, true)
	got := rep.Totals
	if got.InputTokens != 19468 || got.CacheReadTokens != 10113 || got.OutputTokens != 80 || got.TotalTokens != 29661 {
		t.Errorf("totals = %+v", got)
	}
	// gpt-5.5: 19 468 × $5/M + 10 113 × $0.5/M + 80 × $30/M = $0.1047965
	if got.CostMicros != 104797 {
		t.Errorf("cost = %d micro-dollars, want 104797", got.CostMicros)
	}
	if len(rep.Rows) != 1 || len(rep.Rows[0].Models) != 1 || rep.Rows[0].Models[0].Model != "gpt-5.5" {
		t.Errorf("rows = %+v", rep.Rows)
	}
	if res.Stats.Entries != 2 || res.Stats.Skipped[usagelog.SkipDuplicate] != 1 {
		t.Errorf("stats = %+v", res.Stats)
	}
}

func TestCodexTotalReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "sessions", "2026", "01", "01", "rollout-x.jsonl")
	os.MkdirAll(filepath.Dir(p), 0o755)
	tc := func(ts string, in, out int64) string {
		return `{"timestamp":"` + ts + `","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":` +
			itoa(in) + `,"cached_input_tokens":0,"output_tokens":` + itoa(out) + `,"reasoning_output_tokens":0,"total_tokens":` + itoa(in+out) + `}}}}`
	}
	os.WriteFile(p, []byte(`{"timestamp":"2026-01-01T00:00:00.000Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}`+"\n"+
		tc("2026-01-01T00:00:01.000Z", 100, 10)+"\n"+
		tc("2026-01-01T00:00:02.000Z", 150, 12)+"\n"+
		tc("2026-01-02T00:00:03.000Z", 40, 4)+"\n"+ // lower: a new thread, counted in full
		"garbage\n"), 0o644)
	res, err := usagelog.ScanCodex(context.Background(), usagelog.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := usagelog.Aggregate(res, usagelog.Daily, usagelog.Filter{TZ: time.UTC}, false)
	if len(rep.Rows) != 2 || rep.Rows[0].InputTokens != 150 || rep.Rows[1].InputTokens != 40 || rep.Totals.OutputTokens != 16 {
		t.Errorf("rows = %+v", rep.Rows)
	}
}

func itoa(n int64) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

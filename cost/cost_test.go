package cost_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/cost"
)

func TestCostMatchesCcusage(t *testing.T) {
	t.Parallel()
	tab := cost.Default()
	// Figures observed from ccusage 20.0.24 (claude daily --json --offline).
	cases := []struct {
		model string
		tk    cost.Tokens
		nanos int64
	}{
		{"claude-sonnet-4-5-20250929", cost.Tokens{Input: 300000, Output: 1000}, 1_215_000_000},
		{"claude-opus-4-5", cost.Tokens{Input: 100, Output: 50}, 1_750_000},
		{"claude-opus-4-8[1m]", cost.Tokens{Input: 1000, Output: 100}, 7_500_000},
		{"gpt-5-codex", cost.Tokens{Input: 1000, Output: 100}, 2_250_000},
		{"claude-haiku-4-5-20251001", cost.Tokens{Input: 1000, Output: 100}, 1_500_000},
		{"claude-opus-4-5", cost.Tokens{Input: 1, Output: 1, CacheWrite: 70, CacheWrite1h: 50}, 655_000},
		{"claude-opus-4-8", cost.Tokens{Input: 1000, Fast: true}, 10_000_000},
	}
	for _, c := range cases {
		got, ok := tab.Nanos(c.model, c.tk)
		if !ok || got != c.nanos {
			t.Errorf("Nanos(%q, %+v) = %d, %v; want %d", c.model, c.tk, got, ok, c.nanos)
		}
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	tab := cost.Default()
	for model, want := range map[string]string{
		"claude-sonnet-4-5-20250929":  "claude-sonnet-4-5",
		"anthropic/claude-opus-4-5":   "claude-opus-4-5",
		"claude-opus-4-8[1m]":         "claude-opus-4-8",
		"gpt-5.5-2026-04-23":          "gpt-5.5",
		"gpt-5.5-something-new":       "gpt-5.5",
		"claude-sonnet-4":             "claude-sonnet-4-20250514",
		"gemini-2.5-pro":              "gemini-2.5-pro",
		"claude-haiku-4-5-2099-01-01": "claude-haiku-4-5",
	} {
		got, ok := tab.Lookup(model)
		w, _ := tab.Lookup(want)
		if !ok || got.Rates != w.Rates {
			t.Errorf("Lookup(%q) = %+v, %v; want the price of %s %+v", model, got, ok, want, w)
		}
	}
	if _, ok := tab.Lookup("mystery-model"); ok {
		t.Error("mystery-model has a price")
	}
	if _, ok := tab.Cost("mystery-model", muster.Usage{InputTokens: 5}); ok {
		t.Error("Cost of an unknown model is known")
	}
	if tab.Date() != cost.PricesDate {
		t.Errorf("Date = %q", tab.Date())
	}
}

func TestCostMicros(t *testing.T) {
	t.Parallel()
	got, ok := cost.Default().Cost("claude-sonnet-4-5", muster.Usage{InputTokens: 1_000_000, OutputTokens: 1000, CacheReadTokens: 10, CacheWriteTokens: 3})
	// 200k×$3/M + 800k×$6/M + 1000×$15/M + 10×$0.3/M + 3×$3.75/M
	if want := int64(600_000 + 4_800_000 + 15_000 + 3 + 11); !ok || got != want {
		t.Errorf("Cost = %d, %v; want %d", got, ok, want)
	}
}

func TestLoadOverrides(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(p, []byte(`{"date":"2030-01-02","models":{"my-model":{"input":1,"output":2,"cache_read":0.1},"claude-opus-4-5":{"input":50,"output":250}}}`), 0o644)
	tab, err := cost.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Date() != "2030-01-02" {
		t.Errorf("Date = %q", tab.Date())
	}
	if c, ok := tab.Cost("my-model-v2", muster.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}); !ok || c != 3_000_000 {
		t.Errorf("my-model cost = %d %v", c, ok)
	}
	if c, _ := tab.Cost("claude-opus-4-5", muster.Usage{InputTokens: 1_000_000}); c != 50_000_000 {
		t.Errorf("override cost = %d", c)
	}
	if c, _ := tab.Cost("gpt-5", muster.Usage{InputTokens: 1_000_000}); c != 1_250_000 {
		t.Errorf("embedded price lost: %d", c)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n\"models\": {\n\"x\": {\"input\": -1}}}"), 0o644)
	if _, err := cost.Load(bad); err == nil || muster.ErrorCode(err) != muster.CodeInvalid {
		t.Errorf("negative price: err = %v", err)
	}
	syn := filepath.Join(dir, "syn.json")
	os.WriteFile(syn, []byte("{\n\"models\": {,}}"), 0o644)
	if _, err := cost.Load(syn); err == nil || !strings.Contains(err.Error(), "syn.json:2") {
		t.Errorf("syntax error without file:line: %v", err)
	}
	if _, err := cost.Load(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file: no error")
	}
}

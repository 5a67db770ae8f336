package muster_test

import (
	"math"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

func TestUsageSumsSaturate(t *testing.T) {
	var u muster.Usage
	u.Add(muster.Usage{InputTokens: math.MaxInt64, CostMicros: math.MaxInt64})
	u.Add(muster.Usage{InputTokens: math.MaxInt64, CostMicros: math.MaxInt64})
	if u.InputTokens != math.MaxInt64 || u.CostMicros != math.MaxInt64 {
		t.Fatalf("wrapped: %+v", u)
	}
	all := muster.Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64, CacheReadTokens: 1, CacheWriteTokens: 1}
	if all.Tokens() != math.MaxInt64 {
		t.Fatalf("Tokens() = %d", all.Tokens())
	}
	if muster.SatAdd(math.MinInt64, -1) != math.MinInt64 {
		t.Fatal("negative sum wrapped")
	}
}

func TestMicrosFromUSDSaturates(t *testing.T) {
	for usd, want := range map[float64]int64{
		0.01: 10_000, -1000: -1_000_000_000, 1e308: math.MaxInt64, -1e308: math.MinInt64,
		math.Inf(1): math.MaxInt64, math.NaN(): 0,
	} {
		if got := muster.MicrosFromUSD(usd); got != want {
			t.Errorf("MicrosFromUSD(%g) = %d, want %d", usd, got, want)
		}
	}
}

func TestUsageSane(t *testing.T) {
	u, why := muster.Usage{InputTokens: -1, OutputTokens: math.MaxInt64, CostMicros: -5}.Sane()
	if u.InputTokens != 0 || u.OutputTokens != muster.MaxRecordTokens || u.CostMicros != 0 {
		t.Fatalf("Sane() = %+v", u)
	}
	for _, w := range []string{"input_tokens -1 is negative", "output_tokens 9223372036854775807 is past the bound", "cost_usd $-0.00 is negative"} {
		if !strings.Contains(why, w) {
			t.Errorf("why %q lacks %q", why, w)
		}
	}
	if _, why := (muster.Usage{InputTokens: 5, CostMicros: 10}).Sane(); why != "" {
		t.Errorf("a sane record refused: %s", why)
	}
	if c := (muster.Usage{CostMicros: -9, InputTokens: 3}).Credited(); c.CostMicros != 0 || c.InputTokens != 3 {
		t.Errorf("Credited() = %+v", c)
	}
}

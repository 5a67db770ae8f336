package muster

import (
	"fmt"
	"math"
	"strings"
)

// Usage is token counts and cost. Cost is integer micro-dollars so sums
// are exact; CostReported says the agent reported it (else estimated).
type Usage struct {
	InputTokens      int64 `json:"input_tokens,omitempty"`
	OutputTokens     int64 `json:"output_tokens,omitempty"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	CostMicros       int64 `json:"cost_micros,omitempty"`
	Estimated        bool  `json:"estimated,omitempty"`
}

// Bounds on one usage record an agent reports. A record past them is
// refused (Sane): a count below zero counts as zero, one above its bound
// as the bound, so that a lying record can never be a credit against a
// budget nor wrap a sum.
const (
	// MaxRecordTokens bounds each token count of one record (a billion:
	// far past any model's context, and a whole long session).
	MaxRecordTokens = 1_000_000_000
	// MaxRecordCostMicros bounds the cost of one record ($1,000).
	MaxRecordCostMicros = 1_000 * 1_000_000
)

// Add adds o into u. Sums saturate at the limits of int64: they never wrap.
func (u *Usage) Add(o Usage) {
	u.InputTokens = SatAdd(u.InputTokens, o.InputTokens)
	u.OutputTokens = SatAdd(u.OutputTokens, o.OutputTokens)
	u.CacheReadTokens = SatAdd(u.CacheReadTokens, o.CacheReadTokens)
	u.CacheWriteTokens = SatAdd(u.CacheWriteTokens, o.CacheWriteTokens)
	u.CostMicros = SatAdd(u.CostMicros, o.CostMicros)
	u.Estimated = u.Estimated || o.Estimated
}

// SatAdd returns a+b, saturated at math.MaxInt64 and math.MinInt64.
func SatAdd(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// Tokens returns the sum of all token counts (saturated).
func (u Usage) Tokens() int64 {
	return SatAdd(SatAdd(u.InputTokens, u.OutputTokens), SatAdd(u.CacheReadTokens, u.CacheWriteTokens))
}

// IsZero reports whether nothing was used.
func (u Usage) IsZero() bool {
	return u.InputTokens == 0 && u.OutputTokens == 0 && u.CacheReadTokens == 0 && u.CacheWriteTokens == 0 && u.CostMicros == 0
}

// USD returns the cost in dollars.
func (u Usage) USD() float64 { return float64(u.CostMicros) / 1e6 }

// Sane returns u within the record bounds, and what was refused ("" when
// nothing was): a negative count counts as zero, one past its bound
// (MaxRecordTokens, MaxRecordCostMicros) as the bound.
func (u Usage) Sane() (Usage, string) {
	var why []string
	clamp := func(name string, v *int64, bound int64, show func(int64) string) {
		switch {
		case *v < 0:
			why = append(why, fmt.Sprintf("%s %s is negative (counted as 0)", name, show(*v)))
			*v = 0
		case *v > bound:
			why = append(why, fmt.Sprintf("%s %s is past the bound of %s (counted as %s)", name, show(*v), show(bound), show(bound)))
			*v = bound
		}
	}
	count := func(v int64) string { return fmt.Sprint(v) }
	usd := func(v int64) string { return fmt.Sprintf("$%.2f", float64(v)/1e6) }
	clamp("input_tokens", &u.InputTokens, MaxRecordTokens, count)
	clamp("output_tokens", &u.OutputTokens, MaxRecordTokens, count)
	clamp("cache_read_tokens", &u.CacheReadTokens, MaxRecordTokens, count)
	clamp("cache_write_tokens", &u.CacheWriteTokens, MaxRecordTokens, count)
	clamp("cost_usd", &u.CostMicros, MaxRecordCostMicros, usd)
	return u, strings.Join(why, "; ")
}

// Credited returns u with every count below zero taken as zero: what any
// sum of journaled usage adds, so that no record, however it got into a
// journal, is a credit.
func (u Usage) Credited() Usage {
	for _, v := range []*int64{&u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.CostMicros} {
		if *v < 0 {
			*v = 0
		}
	}
	return u
}

// MicrosFromUSD converts dollars to micro-dollars, rounding to nearest.
// Values past what int64 holds saturate; NaN is 0.
func MicrosFromUSD(usd float64) int64 {
	m := usd * 1e6
	switch {
	case math.IsNaN(m):
		return 0
	case m >= math.MaxInt64:
		return math.MaxInt64
	case m <= math.MinInt64:
		return math.MinInt64
	case m < 0:
		return -int64(-m + 0.5)
	}
	return int64(m + 0.5)
}

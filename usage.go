package muster

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

// Add adds o into u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CostMicros += o.CostMicros
	u.Estimated = u.Estimated || o.Estimated
}

// Tokens returns the sum of all token counts.
func (u Usage) Tokens() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// IsZero reports whether nothing was used.
func (u Usage) IsZero() bool { return u.Tokens() == 0 && u.CostMicros == 0 }

// USD returns the cost in dollars.
func (u Usage) USD() float64 { return float64(u.CostMicros) / 1e6 }

// MicrosFromUSD converts dollars to micro-dollars, rounding to nearest.
func MicrosFromUSD(usd float64) int64 {
	if usd < 0 {
		return -int64(-usd*1e6 + 0.5)
	}
	return int64(usd*1e6 + 0.5)
}

// Package cost holds a dated, embedded price table for the models coding
// agents use and turns token counts into money, in integer micro-dollars
// (nano-dollars inside sums).
//
// Prices are in prices.json (USD per million tokens for input, output,
// cache write and cache read, plus an optional above_200k tier and a fast
// mode multiplier). They are the per-token prices that ccusage 20.0.24
// embeds (LiteLLM's list; models.dev for Gemini), taken on PricesDate, so
// that costs computed here agree with ccusage's. A price file in the same
// JSON format, passed to Load, adds models or overrides them.
package cost

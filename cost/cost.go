package cost

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/muster-run/muster"
)

// PricesDate is the date the embedded price table was taken.
const PricesDate = "2026-11-29"

// TierThreshold is the token count above which a model's above_200k
// prices apply. Each token kind is split separately: the first
// TierThreshold tokens of a kind at the base price, the rest at the tier
// price (as LiteLLM and ccusage do).
const TierThreshold = 200_000

//go:embed prices.json
var embedded []byte

// Rates are prices in micro-dollars per million tokens (so $3 per
// million tokens is 3_000_000).
type Rates struct {
	Input      int64
	Output     int64
	CacheWrite int64
	CacheRead  int64
}

// Price is what one model costs.
type Price struct {
	Rates
	// Above holds the prices for tokens beyond TierThreshold of a kind;
	// nil when the model has no tier.
	Above *Rates
	// FastMultiplier multiplies the cost of "fast" mode requests; 0 or 1
	// means no surcharge.
	FastMultiplier float64
}

// Tokens is one request's token counts, with the detail a price needs.
type Tokens struct {
	Input, Output, CacheWrite, CacheRead int64
	// CacheWrite1h is the part of CacheWrite written to the one-hour
	// cache, priced at twice the input price.
	CacheWrite1h int64
	// Fast marks a request served in fast mode.
	Fast bool
}

// Table is a price table with model-name matching. The zero value is an
// empty table; use Default or Load.
type Table struct {
	date    string
	models  map[string]Price
	aliases map[string]string
	keys    []string // model names, longest first, for prefix matching
}

// file is the JSON form of a price table (prices.json and Load files).
type file struct {
	Date    string               `json:"date"`
	Source  string               `json:"source,omitempty"`
	Unit    string               `json:"unit,omitempty"`
	Models  map[string]filePrice `json:"models"`
	Aliases map[string]string    `json:"aliases,omitempty"`
}

type fileRates struct {
	Input      *float64 `json:"input"`
	Output     *float64 `json:"output"`
	CacheWrite *float64 `json:"cache_write"`
	CacheRead  *float64 `json:"cache_read"`
}

type filePrice struct {
	fileRates
	Above200k      *fileRates `json:"above_200k"`
	FastMultiplier float64    `json:"fast_multiplier"`
}

// Default returns a new table holding the embedded prices.
func Default() *Table {
	t := &Table{}
	if err := t.merge(embedded, "prices.json"); err != nil {
		panic("cost: embedded prices.json: " + err.Error()) // a build defect, caught by tests
	}
	return t
}

// Load returns the embedded table extended and overridden by the JSON
// price file at path (same format as the embedded prices.json: USD per
// million tokens). The file's date, when set, becomes the table's date.
func Load(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Op: "read prices", Err: err}
	}
	t := Default()
	if err := t.merge(b, path); err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: err.Error()}
	}
	return t, nil
}

// Parse returns the embedded table extended by the JSON price data b;
// name is used in error messages.
func Parse(b []byte, name string) (*Table, error) {
	t := Default()
	if err := t.merge(b, name); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Table) merge(b []byte, name string) error {
	var f file
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
			line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	if t.models == nil {
		t.models = map[string]Price{}
		t.aliases = map[string]string{}
	}
	if f.Date != "" {
		t.date = f.Date
	}
	for model, fp := range f.Models {
		p, err := fp.price()
		if err != nil {
			return fmt.Errorf("%s: model %q: %w", name, model, err)
		}
		t.models[strings.ToLower(model)] = p
	}
	for from, to := range f.Aliases {
		t.aliases[strings.ToLower(from)] = strings.ToLower(to)
	}
	t.keys = t.keys[:0]
	for k := range t.models {
		t.keys = append(t.keys, k)
	}
	sort.Slice(t.keys, func(i, j int) bool {
		if len(t.keys[i]) != len(t.keys[j]) {
			return len(t.keys[i]) > len(t.keys[j])
		}
		return t.keys[i] < t.keys[j]
	})
	return nil
}

func (fp filePrice) price() (Price, error) {
	r, err := fp.rates(nil)
	if err != nil {
		return Price{}, err
	}
	p := Price{Rates: r, FastMultiplier: fp.FastMultiplier}
	if fp.Above200k != nil {
		a, err := fp.Above200k.rates(&r)
		if err != nil {
			return Price{}, fmt.Errorf("above_200k: %w", err)
		}
		p.Above = &a
	}
	return p, nil
}

// rates converts dollars per million to micro-dollars per million;
// missing fields take base's value (or 0).
func (fr fileRates) rates(base *Rates) (Rates, error) {
	var r Rates
	if base != nil {
		r = *base
	}
	for _, f := range []struct {
		v   *float64
		dst *int64
		n   string
	}{{fr.Input, &r.Input, "input"}, {fr.Output, &r.Output, "output"}, {fr.CacheWrite, &r.CacheWrite, "cache_write"}, {fr.CacheRead, &r.CacheRead, "cache_read"}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 || math.IsNaN(*f.v) || *f.v > 1e6 {
			return r, fmt.Errorf("%s price %v out of range", f.n, *f.v)
		}
		*f.dst = int64(math.Round(*f.v * 1e6))
	}
	return r, nil
}

// Date returns the date of the table's prices (YYYY-MM-DD).
func (t *Table) Date() string {
	if t == nil || t.date == "" {
		return PricesDate
	}
	return t.date
}

// Lookup finds the price of model: exact name, then without a "[...]"
// suffix, a provider prefix ("anthropic/") or a "-fast" suffix, then an
// alias, then without a date suffix, then the longest known name that is
// a prefix of it at a "-" boundary.
func (t *Table) Lookup(model string) (Price, bool) {
	if t == nil || len(t.models) == 0 || model == "" {
		return Price{}, false
	}
	m := strings.ToLower(strings.TrimSpace(model))
	if p, ok := t.models[m]; ok {
		return p, true
	}
	if i := strings.IndexByte(m, '['); i > 0 {
		m = m[:i]
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, c := range []string{m, strings.TrimSuffix(m, "-fast")} {
		if p, ok := t.models[c]; ok {
			return p, true
		}
		if a, ok := t.aliases[c]; ok {
			if p, ok := t.models[a]; ok {
				return p, true
			}
		}
	}
	m = strings.TrimSuffix(m, "-fast")
	if d := stripDate(m); d != m {
		if p, ok := t.models[d]; ok {
			return p, true
		}
		if a, ok := t.aliases[d]; ok {
			if p, ok := t.models[a]; ok {
				return p, true
			}
		}
	}
	for _, k := range t.keys {
		if len(m) > len(k) && strings.HasPrefix(m, k) && m[len(k)] == '-' {
			return t.models[k], true
		}
	}
	return Price{}, false
}

// stripDate removes a trailing -YYYYMMDD or -YYYY-MM-DD.
func stripDate(m string) string {
	digits := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return true
	}
	if n := len(m); n > 9 && m[n-9] == '-' && digits(m[n-8:]) {
		return m[:n-9]
	}
	if n := len(m); n > 11 && m[n-11] == '-' && m[n-3] == '-' && m[n-6] == '-' &&
		digits(m[n-10:n-6]) && digits(m[n-5:n-3]) && digits(m[n-2:]) {
		return m[:n-11]
	}
	return m
}

// Cost returns the cost of u on model in micro-dollars (rounded to
// nearest) and whether the model has a price. u's CostMicros is ignored.
func (t *Table) Cost(model string, u muster.Usage) (micros int64, known bool) {
	n, ok := t.Nanos(model, Tokens{Input: u.InputTokens, Output: u.OutputTokens,
		CacheWrite: u.CacheWriteTokens, CacheRead: u.CacheReadTokens})
	return (n + 500) / 1000, ok
}

// Nanos returns the cost of one request in nano-dollars, so that sums of
// many requests round only once.
func (t *Table) Nanos(model string, tk Tokens) (nanos int64, known bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Nanos(tk), true
}

// Nanos returns the cost of tk at p in nano-dollars. Every product and
// sum saturates at math.MaxInt64: the counts may come from logs an agent
// wrote (muster usage), and a wrapped one would be a negative cost.
func (p Price) Nanos(tk Tokens) int64 {
	w1h := min(max(tk.CacheWrite1h, 0), tk.CacheWrite)
	// units: tokens × micro-dollars per million tokens = 1e-12 dollars.
	pico := p.tiered(tk.Input, p.Input, p.aboveInput())
	for _, v := range []int64{
		p.tiered(tk.Output, p.Output, p.aboveOutput()),
		p.tiered(tk.CacheWrite-w1h, p.CacheWrite, p.aboveCacheWrite()),
		mulSat(mulSat(w1h, 2), p.Input),
		p.tiered(tk.CacheRead, p.CacheRead, p.aboveCacheRead()),
	} {
		pico = muster.SatAdd(pico, v)
	}
	if tk.Fast && p.FastMultiplier > 1 {
		if f := float64(pico) * p.FastMultiplier; f < math.MaxInt64 {
			pico = int64(math.Round(f))
		} else {
			pico = math.MaxInt64
		}
	}
	return pico/1000 + (pico%1000+500)/1000
}

func (p Price) tiered(n, base, above int64) int64 {
	if n <= 0 {
		return 0
	}
	if p.Above == nil || n <= TierThreshold {
		return mulSat(n, base)
	}
	return muster.SatAdd(TierThreshold*base, mulSat(n-TierThreshold, above))
}

// mulSat is n*m for n, m >= 0, saturated at math.MaxInt64.
func mulSat(n, m int64) int64 {
	if n <= 0 || m <= 0 {
		return 0
	}
	if n > math.MaxInt64/m {
		return math.MaxInt64
	}
	return n * m
}

func (p Price) aboveInput() int64 {
	if p.Above == nil {
		return p.Input
	}
	return p.Above.Input
}
func (p Price) aboveOutput() int64 {
	if p.Above == nil {
		return p.Output
	}
	return p.Above.Output
}
func (p Price) aboveCacheWrite() int64 {
	if p.Above == nil {
		return p.CacheWrite
	}
	return p.Above.CacheWrite
}
func (p Price) aboveCacheRead() int64 {
	if p.Above == nil {
		return p.CacheRead
	}
	return p.Above.CacheRead
}

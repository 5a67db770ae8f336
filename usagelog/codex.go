package usagelog

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster/cost"
)

// ScanCodex reads Codex rollout logs: every *.jsonl under DIR/sessions.
//
// A rollout's event_msg/token_count lines report the thread's cumulative
// totals (info.total_token_usage), so each entry is the difference from
// the previous total of the same file; repeated totals add nothing, and a
// total lower than the previous one (a new thread) counts in full. When a
// line has only last_token_usage, that is taken as the increment. The
// model comes from the latest turn_context line. Codex's input_tokens
// include cached input, so cached tokens are moved to CacheReadTokens.
// Files are read whole by one worker each (the running total is state),
// several files at a time.
func ScanCodex(ctx context.Context, opts Options) (*Result, error) {
	dir := opts.Dir
	if dir == "" {
		dir = DefaultCodexDir()
	}
	paths, sizes, err := homeFiles([]string{dir}, opts.Dir != "", opts.Extra, "sessions", ".jsonl")
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	jobs := splitJobs(paths, sizes, 1<<62) // one job per file
	res := newResult("codex", opts.Prices, sizes)
	bufs := make([][]byte, opts.Workers)
	unreadable := 0
	err = runJobs(ctx, jobs, opts.Workers, func(w int, j job) jobOut {
		var o jobOut
		s := codexState{prices: opts.Prices, session: strings.TrimSuffix(filepath.Base(j.path), ".jsonl"), models: map[string]modelInfo{}}
		o.err = forEachLine(j.path, j.start, j.end, opts.MaxLine, &bufs[w], &o.stats, func(line []byte) {
			if e, ok := s.line(line, &o.stats); ok {
				o.entries = append(o.entries, e)
			}
		})
		return o
	}, func(i int, o jobOut) {
		if o.err != nil {
			unreadable++
		}
		res.Stats.add(&o.stats)
		res.Entries = append(res.Entries, o.entries...)
	})
	if err != nil {
		return nil, err
	}
	res.Stats.Unreadable = unreadable
	res.Stats.Entries = int64(len(res.Entries))
	return res, nil
}

// codexTotals is one token_usage object.
type codexTotals struct {
	input, cached, output, reasoning, total int64
	has                                     bool
}

type codexState struct {
	prices  *cost.Table
	session string
	model   string
	prev    codexTotals
	models  map[string]modelInfo
}

var (
	tokenCountMarker  = []byte(`"token_count"`)
	turnContextMarker = []byte(`"turn_context"`)
)

func (s *codexState) line(line []byte, st *Stats) (Entry, bool) {
	isCount := bytes.Contains(line, tokenCountMarker)
	if !isCount && !bytes.Contains(line, turnContextMarker) {
		st.skip(SkipNoUsage, 1)
		return Entry{}, false
	}
	c, ok := parseCodexLine(line)
	if !ok {
		st.skip(SkipInvalidJSON, 1)
		return Entry{}, false
	}
	switch {
	case string(c.typ) == "turn_context":
		if len(c.model) > 0 {
			s.model = string(c.model)
		}
		st.skip(SkipNoUsage, 1)
		return Entry{}, false
	case string(c.typ) != "event_msg" || string(c.ptype) != "token_count":
		st.skip(SkipNotUsage, 1)
		return Entry{}, false
	case c.bad:
		st.skip(SkipBadTokens, 1)
		return Entry{}, false
	case !c.total.has && !c.last.has:
		st.skip(SkipNotUsage, 1) // info: null (rate limits only)
		return Entry{}, false
	}
	t, ok := parseTimestamp(c.ts)
	if !ok {
		st.skip(SkipBadTimestamp, 1)
		return Entry{}, false
	}
	d := s.delta(c.total, c.last)
	st.Records++
	if d.input == 0 && d.cached == 0 && d.output == 0 {
		st.skip(SkipDuplicate, 1) // a repeated total
		return Entry{}, false
	}
	return s.entry(t, d), true
}

// codexLine is what one Codex session line says: its type, its payload's
// type, model and token counts.
type codexLine struct {
	typ, ptype, model, ts []byte
	total, last           codexTotals
	bad                   bool
}

// parseCodexLine reads one line; false when it is not well-formed JSON.
func parseCodexLine(line []byte) (codexLine, bool) {
	var c codexLine
	w := walker{b: line}
	ok := w.object(func(key []byte) bool {
		switch string(key) {
		case "timestamp":
			v, _, ok := w.str()
			c.ts = v
			return ok
		case "type":
			v, _, ok := w.str()
			c.typ = v
			return ok
		case "payload":
			if w.peek() != '{' {
				return w.skip()
			}
			return w.object(func(key []byte) bool { return c.payloadField(&w, key) })
		}
		return w.skip()
	})
	return c, ok && w.end()
}

// payloadField reads one key of a line's payload.
func (c *codexLine) payloadField(w *walker, key []byte) bool {
	switch string(key) {
	case "type":
		v, _, ok := w.str()
		c.ptype = v
		return ok
	case "model":
		if w.peek() != '"' {
			return w.skip()
		}
		v, _, ok := w.str()
		c.model = v
		return ok
	case "info":
		if w.peek() != '{' {
			return w.skip()
		}
		return w.object(func(key []byte) bool {
			switch string(key) {
			case "total_token_usage":
				return codexUsage(w, &c.total, &c.bad)
			case "last_token_usage":
				return codexUsage(w, &c.last, &c.bad)
			}
			return w.skip()
		})
	}
	return w.skip()
}

// delta is what one token_count line adds: the running total less the
// one before it (the whole total when it went down: a new session), or
// the last turn's usage when the line has no total.
func (s *codexState) delta(total, last codexTotals) codexTotals {
	if !total.has {
		return last
	}
	d := total
	if s.prev.has && total.total >= s.prev.total && total.input >= s.prev.input && total.output >= s.prev.output && total.cached >= s.prev.cached {
		d = codexTotals{input: total.input - s.prev.input, cached: total.cached - s.prev.cached,
			output: total.output - s.prev.output, total: total.total - s.prev.total}
	}
	s.prev = total
	return d
}

// entry is the usage entry of a delta at t (Unix milliseconds), priced at the session's
// model (an estimate: Codex records no cost).
func (s *codexState) entry(t int64, d codexTotals) Entry {
	cached := min(d.cached, d.input)
	e := Entry{Time: t, Session: s.session, Model: s.model}
	e.InputTokens, e.CacheReadTokens, e.OutputTokens = d.input-cached, cached, d.output
	mi, ok := s.models[s.model]
	if !ok {
		mi = modelInfo{name: s.model}
		mi.price, mi.known = s.prices.Lookup(s.model)
		s.models[s.model] = mi
	}
	e.Estimated = true
	if mi.known {
		e.CostNanos = mi.price.Nanos(cost.Tokens{Input: e.InputTokens, Output: e.OutputTokens, CacheRead: e.CacheReadTokens})
	} else {
		e.Unpriced = e.Model != ""
	}
	e.CostMicros = (e.CostNanos + 500) / 1000
	return e
}

func codexUsage(w *walker, t *codexTotals, bad *bool) bool {
	if w.null() {
		return true
	}
	if w.peek() != '{' {
		return w.skip()
	}
	t.has = true
	return w.object(func(key []byte) bool {
		var dst *int64
		switch string(key) {
		case "input_tokens":
			dst = &t.input
		case "cached_input_tokens":
			dst = &t.cached
		case "output_tokens":
			dst = &t.output
		case "reasoning_output_tokens":
			dst = &t.reasoning
		case "total_tokens":
			dst = &t.total
		default:
			return w.skip()
		}
		if w.null() {
			return true
		}
		v, ok := w.uint()
		if !ok {
			*bad = true
			return w.skip()
		}
		*dst = v
		return true
	})
}

package usagelog

import (
	"context"
	"hash/maphash"
	"path/filepath"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/cost"
)

// ScanClaude reads Claude Code logs: every *.jsonl under DIR/projects
// (sub-agent files included) for each folder of opts.Dir (default
// DefaultClaudeDirs), and returns de-duplicated usage entries.
//
// Claude Code writes one line per content block, each repeating the
// message's usage, so records are de-duplicated as ccusage 20.0.24 does:
//   - by (message.id, requestId) across all files;
//   - a record without requestId by (message.id, session, timestamp);
//   - a record without message.id is never a duplicate;
//   - a sub-agent (isSidechain) record that replays a message of the same
//     session under a new request id is a duplicate of it.
//
// Of duplicates, a main-chain record beats a sidechain one, then the
// larger token total, then the larger cost; otherwise the first read
// (files in path order) stays. The agent's costUSD is used when logged;
// otherwise the cost is estimated from the price table.
func ScanClaude(ctx context.Context, opts Options) (*Result, error) {
	paths, sizes, err := claudeFiles(opts.Dir, opts.Extra)
	if err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	seed := maphash.MakeSeed()
	jobs := splitJobs(paths, sizes, opts.ChunkSize)
	bufs := make([][]byte, opts.Workers)
	parsers := make([]*claudeParser, opts.Workers)
	res := newResult("claude", opts.Prices, sizes)
	d := newDeduper(1024)
	unreadable := map[int]bool{}
	err = runJobs(ctx, jobs, opts.Workers, func(w int, j job) jobOut {
		p := parsers[w]
		if p == nil {
			p = newClaudeParser(opts.Prices, seed)
			parsers[w] = p
		}
		return p.scan(j, opts.MaxLine, &bufs[w])
	}, func(i int, o jobOut) {
		if o.err != nil {
			unreadable[jobs[i].file] = true
		}
		res.Stats.add(&o.stats)
		for _, e := range o.entries {
			d.push(e)
		}
	})
	if err != nil {
		return nil, err
	}
	res.Stats.Unreadable = len(unreadable)
	res.Entries = d.entries
	res.Stats.Entries = int64(len(d.entries))
	res.Stats.skip(SkipDuplicate, res.Stats.Records-res.Stats.Entries)
	return res, nil
}

// claudeFiles lists the logs under the projects folder of each of dir's
// comma-separated homes (the default homes when dir is empty).
func claudeFiles(dir string, extra []string) ([]string, []int64, error) {
	dirs := DefaultClaudeDirs()
	if dir != "" {
		dirs = strings.Split(dir, ",")
	}
	return homeFiles(dirs, dir != "", extra, "projects", ".jsonl")
}

// scan reads one job's lines into entries.
func (p *claudeParser) scan(j job, maxLine int, buf *[]byte) jobOut {
	var o jobOut
	p.session = sessionFromPath(j.path)
	o.err = forEachLine(j.path, j.start, j.end, maxLine, buf, &o.stats, func(line []byte) {
		e, ok := p.line(line, &o.stats)
		if !ok {
			return
		}
		// Content-block lines of one message are adjacent: keep only
		// the better of two neighbours with the same key.
		if n := len(o.entries); n > 0 && e.hasKey && o.entries[n-1].hasKey &&
			o.entries[n-1].key == e.key && o.entries[n-1].sidechain == e.sidechain {
			if better(&e, &o.entries[n-1]) {
				o.entries[n-1] = e
			}
			return
		}
		o.entries = append(o.entries, e)
	})
	return o
}

// sessionFromPath is the session of a log file whose lines carry no
// sessionId: the file name, or for sub-agent files
// (<session>/subagents/agent-*.jsonl) the session folder.
func sessionFromPath(p string) string {
	dir, file := filepath.Split(p)
	dir = filepath.Clean(dir)
	if filepath.Base(dir) == "subagents" {
		return filepath.Base(filepath.Dir(dir))
	}
	return strings.TrimSuffix(file, ".jsonl")
}

// claudeParser turns lines into entries; one per job (not shared).
type claudeParser struct {
	prices  *cost.Table
	seed    maphash.Seed
	session string
	line1   claudeLine
	models  map[string]modelInfo
	strs    map[string]string
}

type modelInfo struct {
	name  string
	price cost.Price
	known bool
}

func newClaudeParser(t *cost.Table, seed maphash.Seed) *claudeParser {
	return &claudeParser{prices: t, seed: seed,
		models: map[string]modelInfo{}, strs: map[string]string{}}
}

func (p *claudeParser) intern(b []byte) string {
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	p.strs[s] = s
	return s
}

func (p *claudeParser) model(b []byte, fast bool) modelInfo {
	key := string(b)
	if fast {
		key += "\x00fast"
	}
	if mi, ok := p.models[key]; ok {
		return mi
	}
	mi := modelInfo{name: string(b)}
	if fast && mi.name != "" {
		mi.name += "-fast"
	}
	mi.price, mi.known = p.prices.Lookup(string(b))
	p.models[key] = mi
	return mi
}

// maxLoggedCostUSD bounds the cost one logged message may claim (the
// bound of one usage record, muster.MaxRecordCostMicros): a negative or
// larger costUSD, which no agent logs but one an agent wrote may hold, is
// not taken, and the tokens are priced instead.
const maxLoggedCostUSD = float64(muster.MaxRecordCostMicros) / 1e6

func (p *claudeParser) line(line []byte, st *Stats) (Entry, bool) {
	l := &p.line1
	if reason := parseClaudeLine(line, l); reason != "" {
		st.skip(reason, 1)
		return Entry{}, false
	}
	ts, ok := parseTimestamp(l.timestamp)
	if !ok {
		st.skip(SkipBadTimestamp, 1)
		return Entry{}, false
	}
	st.Records++
	e := Entry{Time: ts, sidechain: l.sidechain}
	e.InputTokens, e.OutputTokens = l.input, l.output
	e.CacheWriteTokens, e.CacheReadTokens = l.cacheWrite, l.cacheRead
	if l.hasSess {
		e.Session = p.intern(l.session)
	} else {
		e.Session = p.session
	}
	var mi modelInfo
	if l.hasModel && string(l.model) != "<synthetic>" {
		mi = p.model(l.model, l.fast)
		e.Model = mi.name
	}
	switch {
	case l.hasCost && l.costUSD >= 0 && l.costUSD <= maxLoggedCostUSD:
		e.CostNanos = int64(l.costUSD*1e9 + 0.5)
	case mi.known:
		e.CostNanos = mi.price.Nanos(cost.Tokens{Input: l.input, Output: l.output,
			CacheWrite: l.cacheWrite, CacheRead: l.cacheRead, CacheWrite1h: l.eph1h, Fast: l.fast})
		e.Estimated = true
	default:
		e.Estimated = true
		e.Unpriced = e.Model != "" && e.Tokens() > 0
	}
	e.CostMicros = (e.CostNanos + 500) / 1000
	if l.hasMsgID {
		var h maphash.Hash
		h.SetSeed(p.seed)
		h.Write(l.msgID)
		h.WriteByte(0)
		if l.hasReqID {
			h.WriteByte(1)
			h.Write(l.reqID)
		} else {
			h.WriteByte(2)
			h.WriteString(e.Session)
			h.WriteByte(0)
			var b [8]byte
			for i := range b {
				b[i] = byte(ts >> (8 * i))
			}
			h.Write(b[:])
		}
		e.key = h.Sum64()
		h.Reset()
		h.WriteByte(3)
		h.Write(l.msgID)
		h.WriteByte(0)
		h.WriteString(e.Session)
		e.replayKey = h.Sum64()
		e.hasKey = true
	}
	return e, true
}

// deduper keeps the surviving entry per key.
type deduper struct {
	entries []Entry
	exact   map[uint64]int32
	replay  map[uint64]int32 // first entry per (message, session)
	side    map[uint64]int32 // first sidechain entry per (message, session)
}

func newDeduper(hint int) *deduper {
	return &deduper{exact: make(map[uint64]int32, hint), replay: map[uint64]int32{}, side: map[uint64]int32{}}
}

func (d *deduper) push(e Entry) {
	if !e.hasKey {
		d.entries = append(d.entries, e)
		return
	}
	idx, found := d.exact[e.key]
	if !found {
		if e.sidechain {
			idx, found = d.replay[e.replayKey]
		} else {
			idx, found = d.side[e.replayKey]
		}
	}
	if found {
		if better(&e, &d.entries[idx]) {
			d.entries[idx] = e
			d.index(e, idx)
		}
		return
	}
	idx = int32(len(d.entries))
	d.entries = append(d.entries, e)
	d.index(e, idx)
}

func (d *deduper) index(e Entry, idx int32) {
	if _, ok := d.exact[e.key]; !ok {
		d.exact[e.key] = idx
	}
	if _, ok := d.replay[e.replayKey]; !ok {
		d.replay[e.replayKey] = idx
	}
	if e.sidechain {
		if _, ok := d.side[e.replayKey]; !ok {
			d.side[e.replayKey] = idx
		}
	}
}

// better reports whether candidate c replaces the kept entry k.
func better(c, k *Entry) bool {
	if c.sidechain != k.sidechain {
		return k.sidechain
	}
	if ct, kt := c.Tokens(), k.Tokens(); ct != kt {
		return ct > kt
	}
	return c.CostNanos > k.CostNanos
}

// parseTimestamp parses an RFC 3339 time with a zone into Unix
// milliseconds; the common "2006-01-02T15:04:05.000Z" form takes a fast
// path.
func parseTimestamp(b []byte) (int64, bool) {
	if len(b) == 24 && b[23] == 'Z' && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[16] == ':' && b[19] == '.' {
		d := func(i, n int) (int, bool) {
			v := 0
			for k := i; k < i+n; k++ {
				c := b[k]
				if c < '0' || c > '9' {
					return 0, false
				}
				v = v*10 + int(c-'0')
			}
			return v, true
		}
		y, ok1 := d(0, 4)
		mo, ok2 := d(5, 2)
		dd, ok3 := d(8, 2)
		h, ok4 := d(11, 2)
		mi, ok5 := d(14, 2)
		s, ok6 := d(17, 2)
		ms, ok7 := d(20, 3)
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && mo >= 1 && mo <= 12 && dd >= 1 && dd <= 31 && h < 24 && mi < 60 && s < 61 {
			days := daysFromCivil(y, mo, dd)
			return ((days*86400+int64(h*3600+mi*60+s))*1000 + int64(ms)), true
		}
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// daysFromCivil returns days since 1970-01-01 (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

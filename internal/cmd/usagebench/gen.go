package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// genOptions shape a synthetic Claude Code log corpus.
type genOptions struct {
	Dir      string // CLAUDE_CONFIG_DIR to create (projects/ goes inside)
	Size     int64  // total bytes, roughly
	Projects int
	Days     int
	Big      int   // number of very large session files
	BigSize  int64 // size of each
	Seed     uint64
	// Single writes everything into one file (the memory check).
	Single bool
}

// genStats summarise what was written.
type genStats struct {
	Files, Lines, Assistant, Junk int64
	Bytes                         int64
}

var models = []struct {
	name   string
	weight int
}{
	{"claude-opus-4-8", 35}, {"claude-sonnet-4-5-20250929", 30}, {"claude-haiku-4-5-20251001", 20},
	{"claude-opus-4-5-20251101", 10}, {"claude-sonnet-4-6", 5},
}

const words = "the quick brown fox jumps over lazy dog func return error nil context value struct interface package import go test build run file line path string \"quoted\" tab\\t newline\\n caf\\u00e9 "

type gen struct {
	o     genOptions
	r     *rand.Rand
	st    genStats
	start time.Time
	// earlier assistant lines per project, replayed by resumed sessions
	history map[int][][]byte
	msgN    int64
}

func generate(o genOptions) (genStats, error) {
	g := &gen{o: o, r: rand.New(rand.NewPCG(o.Seed, 7)), history: map[int][][]byte{},
		start: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)}
	if err := os.MkdirAll(filepath.Join(o.Dir, "projects"), 0o755); err != nil {
		return g.st, err
	}
	if o.Single {
		err := g.session(0, filepath.Join(o.Dir, "projects", "-home-u-big", "single.jsonl"), o.Size, false)
		return g.st, err
	}
	for i := 0; g.st.Bytes < o.Size; i++ {
		proj := g.r.IntN(o.Projects)
		size := int64(20_000 + g.r.ExpFloat64()*200_000)
		if i < o.Big {
			size = o.BigSize
		}
		sid := g.uuid()
		dir := filepath.Join(o.Dir, "projects", fmt.Sprintf("-home-u-src-project%02d", proj))
		if err := g.session(proj, filepath.Join(dir, sid+".jsonl"), size, g.r.IntN(100) < 15); err != nil {
			return g.st, err
		}
		if g.r.IntN(100) < 20 {
			n := 1 + g.r.IntN(2)
			for k := 0; k < n; k++ {
				p := filepath.Join(dir, sid, "subagents", "agent-"+g.hex(8)+".jsonl")
				if err := g.subagent(proj, p, int64(10_000+g.r.IntN(80_000)), sid); err != nil {
					return g.st, err
				}
			}
		}
	}
	return g.st, nil
}

func (g *gen) uuid() string {
	return g.hex(8) + "-" + g.hex(4) + "-" + g.hex(4) + "-" + g.hex(4) + "-" + g.hex(12)
}

func (g *gen) hex(n int) string {
	const h = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = h[g.r.IntN(16)]
	}
	return string(b)
}

func (g *gen) text(n int) []byte {
	out := make([]byte, 0, n+16)
	for len(out) < n {
		i := g.r.IntN(len(words) - 16)
		out = append(out, words[i:i+4+g.r.IntN(12)]...)
	}
	return validEscapes(out)
}

// validEscapes escapes quotes and drops any backslash that does not start
// a valid escape, so every line stays valid JSON.
func validEscapes(b []byte) []byte {
	hex := func(c byte) bool { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') }
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			out = append(out, '\\', '"')
		case c != '\\':
			out = append(out, c)
		case i+1 < len(b) && (b[i+1] == 'n' || b[i+1] == 't'):
			out = append(out, c, b[i+1])
			i++
		case i+5 < len(b) && b[i+1] == 'u' && hex(b[i+2]) && hex(b[i+3]) && hex(b[i+4]) && hex(b[i+5]):
			out = append(out, b[i:i+6]...)
			i += 5
		}
	}
	return out
}

func (g *gen) model() string {
	n := g.r.IntN(100)
	for _, m := range models {
		if n < m.weight {
			return m.name
		}
		n -= m.weight
	}
	return models[0].name
}

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// session writes one session file of about size bytes.
func (g *gen) session(proj int, path string, size int64, resumed bool) error {
	w, f, err := create(path)
	if err != nil {
		return err
	}
	sid := filepath.Base(path)
	sid = sid[:len(sid)-len(".jsonl")]
	t := g.start.Add(time.Duration(g.r.Int64N(int64(g.o.Days) * 24 * int64(time.Hour))))
	var written int64
	put := func(b []byte) {
		w.Write(b)
		w.WriteByte('\n')
		written += int64(len(b) + 1)
		g.st.Lines++
		g.st.Bytes += int64(len(b) + 1)
	}
	if resumed && len(g.history[proj]) > 0 {
		h := g.history[proj]
		for _, l := range h[g.r.IntN(len(h)):] {
			put(l)
		}
	}
	put([]byte(`{"type":"queue-operation","operation":"enqueue","timestamp":"` + ts(t) + `","sessionId":"` + sid + `"}`))
	cwd := fmt.Sprintf("/home/u/src/project%02d", proj)
	for written < size {
		t = t.Add(time.Duration(2+g.r.IntN(120)) * time.Second)
		put(g.userLine(sid, cwd, t, g.text(50+g.r.IntN(400)), false))
		blocks := 1 + g.r.IntN(3)
		lines := g.assistant(sid, cwd, t, blocks, false, "")
		for _, l := range lines {
			put(l)
		}
		if g.r.IntN(100) < 3 {
			h := g.history[proj]
			if len(h) < 400 {
				g.history[proj] = append(h, lines...)
			}
		}
		t = t.Add(time.Duration(1+g.r.IntN(20)) * time.Second)
		put(g.toolResult(sid, cwd, t))
		switch n := g.r.IntN(1000); {
		case n < 2:
			put([]byte(`not json at all: ` + g.hex(20)))
			g.st.Junk++
		case n < 4:
			l := g.assistant(sid, cwd, t, 1, false, "")[0]
			put(l[:len(l)/2]) // a torn line
			g.st.Junk++
		case n < 6:
			put([]byte(`{"type": "assistant", "message": {"id": "msg_spaced", "usage": {"input_tokens": 5, "output_tokens": 1}}, "timestamp": "` + ts(t) + `"}`))
			g.st.Junk++
		case n < 30:
			put([]byte(`{"type":"attachment","attachment":{"type":"file","path":"` + cwd + `/main.go"},"timestamp":"` + ts(t) + `","sessionId":"` + sid + `"}`))
		case n < 40:
			put([]byte(`{"type":"system","subtype":"api_retry","attempt":1,"timestamp":"` + ts(t) + `","sessionId":"` + sid + `"}`))
		}
	}
	put([]byte(`{"type":"last-prompt","lastPrompt":"done","sessionId":"` + sid + `"}`))
	g.st.Files++
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func (g *gen) subagent(proj int, path string, size int64, parent string) error {
	w, f, err := create(path)
	if err != nil {
		return err
	}
	t := g.start.Add(time.Duration(g.r.Int64N(int64(g.o.Days) * 24 * int64(time.Hour))))
	cwd := fmt.Sprintf("/home/u/src/project%02d", proj)
	var written int64
	for written < size {
		t = t.Add(time.Duration(1+g.r.IntN(30)) * time.Second)
		for _, l := range g.assistant(parent, cwd, t, 1+g.r.IntN(2), true, "") {
			w.Write(l)
			w.WriteByte('\n')
			written += int64(len(l) + 1)
			g.st.Lines++
			g.st.Bytes += int64(len(l) + 1)
		}
		l := g.toolResult(parent, cwd, t)
		w.Write(l)
		w.WriteByte('\n')
		written += int64(len(l) + 1)
		g.st.Lines++
		g.st.Bytes += int64(len(l) + 1)
	}
	g.st.Files++
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func create(path string) (*bufio.Writer, *os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	return bufio.NewWriterSize(f, 1<<20), f, nil
}

func (g *gen) userLine(sid, cwd string, t time.Time, text []byte, side bool) []byte {
	b := []byte(`{"parentUuid":"` + g.uuid() + `","isSidechain":` + strconv.FormatBool(side) + `,"userType":"external","cwd":"` + cwd + `","sessionId":"` + sid + `","version":"2.1.197","gitBranch":"main","type":"user","message":{"role":"user","content":"`)
	b = append(b, text...)
	b = append(b, `"},"uuid":"`+g.uuid()+`","timestamp":"`+ts(t)+`"}`...)
	return b
}

func (g *gen) toolResult(sid, cwd string, t time.Time) []byte {
	n := 500 + int(g.r.ExpFloat64()*6000)
	if g.r.IntN(100) == 0 {
		n = 200_000 + g.r.IntN(300_000) // a big file read
	}
	b := []byte(`{"parentUuid":"` + g.uuid() + `","isSidechain":false,"userType":"external","cwd":"` + cwd + `","sessionId":"` + sid + `","version":"2.1.197","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_` + g.hex(24) + `","type":"tool_result","content":"`)
	b = append(b, g.text(n)...)
	b = append(b, `","is_error":false}]},"uuid":"`+g.uuid()+`","timestamp":"`+ts(t)+`","toolUseResult":{"stdout":"ok","stderr":"","interrupted":false}}`...)
	return b
}

// assistant returns the lines of one API message: one line per content
// block, each repeating id, requestId and the final usage.
func (g *gen) assistant(sid, cwd string, t time.Time, blocks int, side bool, _ string) [][]byte {
	g.msgN++
	model := g.model()
	msgID := "msg_01" + g.hex(22)
	reqID := "req_011" + g.hex(21)
	in := int64(1 + g.r.IntN(30))
	if g.r.IntN(20) == 0 {
		in = int64(1000 + g.r.IntN(30000))
	}
	cr := int64(g.r.IntN(150_000))
	if g.r.IntN(50) == 0 {
		cr = int64(200_000 + g.r.IntN(600_000)) // above the 200k tier
	}
	cw1h := int64(0)
	cw5m := int64(g.r.IntN(20_000))
	if g.r.IntN(4) == 0 {
		cw1h = int64(g.r.IntN(10_000))
	}
	out := int64(10 + g.r.IntN(3000))
	usage := `"usage":{"input_tokens":` + strconv.FormatInt(in, 10) +
		`,"cache_creation_input_tokens":` + strconv.FormatInt(cw1h+cw5m, 10) +
		`,"cache_read_input_tokens":` + strconv.FormatInt(cr, 10) +
		`,"output_tokens":` + strconv.FormatInt(out, 10) +
		`,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":` + strconv.FormatInt(cw1h, 10) +
		`,"ephemeral_5m_input_tokens":` + strconv.FormatInt(cw5m, 10) + `}}`
	extra := ""
	if g.r.IntN(100) == 0 {
		extra = `,"costUSD":` + strconv.FormatFloat(float64(out)*0.00002, 'f', -1, 64)
	}
	lines := make([][]byte, 0, blocks)
	for k := 0; k < blocks; k++ {
		var content []byte
		if k == blocks-1 && blocks > 1 {
			content = append([]byte(`{"type":"tool_use","id":"toolu_`+g.hex(24)+`","name":"Edit","input":{"file_path":"`+cwd+`/main.go","old_string":"`), g.text(100+g.r.IntN(2000))...)
			content = append(content, `","new_string":"x"}}`...)
		} else {
			content = append([]byte(`{"type":"text","text":"`), g.text(50+g.r.IntN(1500))...)
			content = append(content, `"}`...)
		}
		b := []byte(`{"parentUuid":"` + g.uuid() + `","isSidechain":` + strconv.FormatBool(side) + `,"userType":"external","cwd":"` + cwd + `","sessionId":"` + sid + `","version":"2.1.197","gitBranch":"main","message":{"id":"` + msgID + `","type":"message","role":"assistant","model":"` + model + `","content":[`)
		b = append(b, content...)
		b = append(b, `],"stop_reason":"tool_use","stop_sequence":null,`+usage+`},"requestId":"`+reqID+`","type":"assistant","uuid":"`+g.uuid()+`","timestamp":"`+ts(t.Add(time.Duration(k*150)*time.Millisecond))+`"`+extra+`}`...)
		lines = append(lines, b)
		g.st.Assistant++
	}
	return lines
}

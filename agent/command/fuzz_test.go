package command

import (
	"bytes"
	"math"
	"strings"
	"testing"

	muster "github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/redact"
)

// FuzzParser feeds random output (records of every type, of any size and
// value, and transcript) to the command executor's parser: what it keeps
// stays bounded however much the program prints, no record it emits is
// past the caps, no secret survives, and usage summed through the
// driver's check (muster.Usage.Sane) is never negative. Plain `go test`
// runs the seeds only; `go test -fuzz FuzzParser ./agent/command/` explores.
func FuzzParser(f *testing.F) {
	for _, s := range []string{
		`{"type":"usage","model":"m","input_tokens":1,"output_tokens":2,"cost_usd":0.01}`,
		`{"type":"usage","input_tokens":-5,"cost_usd":-1000}`,
		`{"type":"usage","input_tokens":9223372036854775807,"output_tokens":9223372036854775807,"cost_usd":1e308}`,
		`{"type":"usage","input_tokens":1e30,"cost_usd":"nan","cache_read_tokens":1.5}`,
		`{"type":"tool","name":"Edit","args":{"path":"x.go"}}`,
		`{"type":"tool","name":"` + strings.Repeat("n", 3000) + `","args":"` + strings.Repeat("a", 3000) + `"}`,
		`{"type":"findings","findings":[{"severity":"MAJOR","title":"t","detail":"d","path":"p","line":-3}]}`,
		`{"type":"notes","text":"secretvalue sk-abcdefghijklmnopqrstuvwx"}`,
		`{"type":"session","session_id":"s1"}` + "\n" + `{"type":"satisfied"}`,
		"plain transcript postgres://u:secretvalue@h/db\n{\"type\":3}\n{not json",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var total muster.Usage
		p := parser{red: redact.New("secretvalue")}
		p.emit = func(r muster.Record) {
			if len(r.Model) > MaxName+20 || len(r.Tool) > MaxName+20 || len(r.Args) > MaxArgs+20 ||
				len(r.Text) > max(MaxMessage, MaxNotes)+20 || len(r.Findings) > MaxFindings {
				t.Fatalf("record past its caps: model %d, tool %d, args %d, text %d, findings %d",
					len(r.Model), len(r.Tool), len(r.Args), len(r.Text), len(r.Findings))
			}
			for _, f := range r.Findings {
				if len(f.Title) > MaxFindingTitle+20 || len(f.Detail) > MaxFindingDetail+20 || len(f.Path) > MaxFindingTitle+20 || f.Line < 0 {
					t.Fatalf("finding past its caps: %+v", f)
				}
			}
			for _, s := range []string{r.Model, r.Tool, r.Args, r.Text} {
				if strings.Contains(s, "secretvalue") {
					t.Fatalf("secret kept in %q", s)
				}
			}
			if r.Type == muster.RecUsage {
				u, _ := r.Usage.Sane()
				for _, v := range []int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens} {
					if v < 0 || v > muster.MaxRecordTokens {
						t.Fatalf("sane usage out of bounds: %+v", u)
					}
				}
				if u.CostMicros < 0 || u.CostMicros > muster.MaxRecordCostMicros {
					t.Fatalf("sane cost out of bounds: %+v", u)
				}
				total.Add(u)
				// Every record counted again, many times over: sums saturate.
				for i := 0; i < 3; i++ {
					total.Add(muster.Usage{InputTokens: math.MaxInt64, CostMicros: math.MaxInt64})
				}
			}
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			p.line(string(line))
			p.stderr(string(line))
		}
		res := p.result()
		if len(res.Tail) > TailBytes || cap(p.tail.b) > 8*TailBytes {
			t.Fatalf("tail kept %d bytes (capacity %d)", len(res.Tail), cap(p.tail.b))
		}
		if len(res.Findings) > MaxFindings {
			t.Fatalf("%d findings kept", len(res.Findings))
		}
		if p.msgBytes > MaxMessages+MaxMessage+len("…[truncated]") {
			t.Fatalf("%d bytes of messages emitted", p.msgBytes)
		}
		if total.InputTokens < 0 || total.CostMicros < 0 || total.Tokens() < 0 {
			t.Fatalf("negative total: %+v", total)
		}
		if strings.Contains(res.Tail, "secretvalue") {
			t.Fatal("secret kept in the tail")
		}
	})
}

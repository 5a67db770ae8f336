package usagelog

import (
	"encoding/json"
	"hash/maphash"
	"testing"

	"github.com/muster-run/muster/cost"
)

// FuzzClaudeLine checks that no input panics the line parser, and that
// what it accepts agrees with encoding/json on the fields it reads.
func FuzzClaudeLine(f *testing.F) {
	for _, s := range []string{
		`{"message":{"id":"m","model":"claude-opus-4-5","usage":{"input_tokens":1,"output_tokens":2,"cache_creation":{"ephemeral_1h_input_tokens":3}}},"requestId":"r","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","version":"1.0.0"}`,
		`{"type":"progress","sessionId":"s","data":{"message":{"timestamp":"2026-01-01T00:00:00Z","requestId":"r","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":2}}}}}`,
		`{"message":{"usage":{"input_tokens":1,"output_tokens":2},"content":[{"text":"a\"b\\"}]},"timestamp":"x"}`,
		`{"usage":{`, `"usage":{"`, `{"message":{"usage":{}}}`, `[1,2]`, `{"a":[{"b":"usage\":{"}]}`,
	} {
		f.Add([]byte(s))
	}
	p := newClaudeParser(cost.Default(), maphash.MakeSeed())
	p.session = "file"
	f.Fuzz(func(t *testing.T, b []byte) {
		var st Stats
		e, ok := p.line(b, &st)
		if !ok {
			return
		}
		var v struct {
			Timestamp string `json:"timestamp"`
			Message   *struct {
				Usage struct {
					In  int64 `json:"input_tokens"`
					Out int64 `json:"output_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return // the walker does not validate skipped values; see docs
		}
		if v.Message != nil && (v.Message.Usage.In != e.InputTokens || v.Message.Usage.Out != e.OutputTokens) {
			t.Errorf("tokens %d/%d, encoding/json %d/%d", e.InputTokens, e.OutputTokens, v.Message.Usage.In, v.Message.Usage.Out)
		}
	})
}

// FuzzCodexLine checks that no input panics the Codex line parser.
func FuzzCodexLine(f *testing.F) {
	f.Add([]byte(`{"timestamp":"2026-01-01T00:00:00.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"cached_input_tokens":9,"output_tokens":1}}}}`))
	f.Add([]byte(`{"type":"turn_context","payload":{"model":"gpt-5"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := codexState{prices: cost.Default(), session: "x", models: map[string]modelInfo{}}
		var st Stats
		e, ok := s.line(b, &st)
		if ok && (e.InputTokens < 0 || e.CacheReadTokens < 0 || e.OutputTokens < 0) {
			t.Errorf("negative tokens: %+v", e)
		}
	})
}

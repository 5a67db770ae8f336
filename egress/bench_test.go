package egress_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/internal/agentkit/clitest"
	"github.com/muster-run/muster/mockllm"
)

// BenchmarkModelRequest measures one streamed model request (Anthropic
// Messages, server-sent events) on loopback, straight to the mock model
// server and through muster's endpoint; the difference is what the
// endpoint adds (target: under 1 ms median, first byte and total).
// Metrics: first-byte-ns and total-ns per request.
//
//	go test ./egress -run '^$' -bench BenchmarkModelRequest -count 10
func BenchmarkModelRequest(b *testing.B) {
	m, err := mockllm.Listen("127.0.0.1:0", &mockllm.Script{Scenarios: []mockllm.Scenario{{Name: "default", Steps: []mockllm.Step{
		{Text: strings.Repeat("word ", 200), Usage: &mockllm.Usage{InputTokens: 100, OutputTokens: 200}}}}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	b.Setenv("EGRESS_BENCH_KEY", "sk-bench")
	rt, err := egress.RouteFor(&muster.ExecutorSpec{Name: "b", Kind: muster.ExecClaudeCode, BaseURL: m.URL + "/v1"}, "", "EGRESS_BENCH_KEY")
	if err != nil {
		b.Fatal(err)
	}
	s, _ := serveB(b, rt)
	body := `{"model":"m","stream":true,"max_tokens":300,"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct{ name, url string }{{"direct", m.URL}, {"endpoint", s.URL()}} {
		b.Run(c.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{}}
			var first, total time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				req, _ := http.NewRequest(http.MethodPost, c.url+"/v1/messages", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-api-key", muster.PlaceholderKey)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				r := bufio.NewReader(resp.Body)
				if _, err := r.ReadByte(); err != nil {
					b.Fatal(err)
				}
				first += time.Since(start)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						break
					}
				}
				resp.Body.Close()
				total += time.Since(start)
			}
			b.ReportMetric(float64(first.Nanoseconds())/float64(b.N), "first-byte-ns")
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "total-ns")
		})
	}
}

func serveB(b *testing.B, rt *egress.Route) (*egress.Server, *clitest.Recorder) {
	b.Helper()
	recs := &clitest.Recorder{}
	s := egress.New(egress.Options{Route: rt, Report: recs.Emit})
	ln, err := netListen()
	if err != nil {
		b.Fatal(err)
	}
	s.Serve(ln)
	b.Cleanup(func() { s.Close() })
	return s, recs
}

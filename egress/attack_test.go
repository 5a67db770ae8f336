package egress_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/egress"
)

// TestModelEndpointModelCannotBeSmuggled: the model the endpoint checks
// is the one the provider reads. A body the endpoint cannot read as one
// JSON object (NaN, which Python's json accepts; trailing data; a
// compressed body), a second model field, or one spelled in another case
// (Go's decoder matches field names case-insensitively, a provider does
// not: {"model":"big","Model":"m1"} read as m1 here runs big there) is
// refused before it reaches the provider, when the executor names its
// models.
func TestModelEndpointModelCannotBeSmuggled(t *testing.T) {
	m := mock(t, usageScript)
	s, recs := serve(t, route(t, muster.ExecClaudeCode, m.URL+"/v1", "m1"), muster.Network{}, nil)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, `{"model":"big","max_tokens":10,"messages":[]}`)
	zw.Close()
	bodies := map[string]string{
		"case":     `{"model":"big","Model":"m1","max_tokens":10,"messages":[]}`,
		"twice":    `{"model":"big","model":"m1","max_tokens":10,"messages":[]}`,
		"nan":      `{"model":"big","temperature":NaN,"max_tokens":10,"messages":[]}`,
		"trailing": `{"model":"big","max_tokens":10,"messages":[]} {}`,
		"notstr":   `{"model":["big"],"max_tokens":10,"messages":[]}`,
		"gzip":     gz.String(),
	}
	before := len(m.Requests())
	for name, body := range bodies {
		resp, text := post(t, s.URL()+"/v1/messages", muster.PlaceholderKey, body)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d (%s), want 403", name, resp.StatusCode, text)
		}
	}
	if n := len(m.Requests()) - before; n != 0 {
		t.Errorf("the provider got %d smuggled requests", n)
	}
	if len(recs.Of(muster.RecBlocked)) == 0 {
		t.Error("no Blocked record")
	}
	// The honest request still passes, and one without a model (the
	// provider refuses it) is the provider's to answer.
	if resp, text := post(t, s.URL()+"/v1/messages", muster.PlaceholderKey, `{"model":"m1","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
		t.Fatalf("honest request: %d %s", resp.StatusCode, text)
	}
}

// TestModelEndpointMetersCompressedResponses: an agent that asks for a
// compressed response (Accept-Encoding: gzip, as real providers honour)
// must not blind muster's meter: the provider's usage is still read, so
// an agent cannot spend past the budget by claiming nothing.
func TestModelEndpointMetersCompressedResponses(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := `{"id":"msg_1","type":"message","role":"assistant","model":"m1","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":120,"output_tokens":7}}`
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, body)
			zw.Close()
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(up.Close)
	s, recs := serve(t, route(t, muster.ExecClaudeCode, up.URL+"/v1", "m1"), muster.Network{}, nil)
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(`{"model":"m1","max_tokens":10,"messages":[]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if got := s.Result(); got.Missing != 0 || len(got.Usage) != 1 || got.Usage[0].Usage.InputTokens != 120 {
		t.Fatalf("a compressed response blinded the meter: %+v (records %+v)", got, recs.Of(muster.RecUsage))
	}
}

// TestModelEndpointBoundsRequestsInFlight: an agent that fires many
// model requests at once cannot spend past the run's budget by all of
// them: at most egress.MaxInFlight of an invocation's reach the provider
// at a time, and those waiting for a place are checked against the
// budget again when they get one (429 once it is spent).
func TestModelEndpointBoundsRequestsInFlight(t *testing.T) {
	var mu sync.Mutex
	reached := 0
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached++
		mu.Unlock()
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"m","type":"message","role":"assistant","model":"m1","content":[],"usage":{"input_tokens":120,"output_tokens":7}}`)
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	ledger := egress.NewLedger(muster.RunConfig{BudgetTokens: 100})
	s, _ := serve(t, route(t, muster.ExecClaudeCode, up.URL+"/v1", "m1"), muster.Network{}, ledger)
	const n = 3 * egress.MaxInFlight
	codes := make(chan int, n)
	for i := 0; i < n; i++ {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(`{"model":"m1","max_tokens":10,"messages":[]}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	// Wait for the first requests to reach the provider; the run's
	// journal then shows the budget spent, and they are answered.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		k := reached
		mu.Unlock()
		if k >= egress.MaxInFlight {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests reached the provider", k)
		}
	}
	ledger.Observe(muster.Usage{InputTokens: 100 * int64(egress.MaxInFlight)})
	close(release)
	got := map[int]int{}
	for i := 0; i < n; i++ {
		got[<-codes]++
	}
	mu.Lock()
	defer mu.Unlock()
	if reached > egress.MaxInFlight {
		t.Errorf("%d requests reached the provider past a spent budget (at most %d in flight): statuses %v", reached, egress.MaxInFlight, got)
	}
	if got[http.StatusTooManyRequests] != n-reached {
		t.Errorf("statuses %v: want 429 for every request that waited past the budget", got)
	}
}

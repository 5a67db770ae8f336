package egress_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// TestModelEndpointStreamsUnbuffered (issue 22, item 2: "streaming passes
// through unbuffered"): the provider sends the stream's first event and
// then waits until the agent has received it; only then does it finish.
// An endpoint that buffered the response would never deliver the first
// event before the last, and the provider's wait would end by its guard
// instead (an ordering check: nothing here asserts a duration).
func TestModelEndpointStreamsUnbuffered(t *testing.T) {
	release := make(chan struct{})
	guarded := make(chan bool, 1)
	ups := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":0}}}\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
			guarded <- false
		case <-time.After(time.Minute): // a hang guard, not an assertion of speed
			guarded <- true
		}
		_, _ = w.Write([]byte("event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":3}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	}))
	t.Cleanup(ups.Close)
	s, _ := serve(t, route(t, muster.ExecClaudeCode, ups.URL+"/v1", "m1"), muster.Network{Policy: muster.NetProvider}, nil)
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/messages",
		strings.NewReader(`{"model":"m1","stream":true,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", muster.PlaceholderKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var first, rest []string
	for sc.Scan() {
		if strings.Contains(sc.Text(), "message_start") && first == nil {
			first = append(first, sc.Text())
			close(release)
			continue
		}
		rest = append(rest, sc.Text())
	}
	if first == nil {
		t.Fatalf("no first event reached the agent (status %d)", resp.StatusCode)
	}
	if <-guarded {
		t.Error("the first event reached the agent only after the provider's stream ended: the endpoint buffered it")
	}
	if !strings.Contains(strings.Join(rest, "\n"), "message_stop") {
		t.Errorf("the rest of the stream was lost: %q", rest)
	}
}

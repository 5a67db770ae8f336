package egress_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/internal/agentkit/clitest"
	"github.com/muster-run/muster/mockllm"
)

const realKey = "sk-real-0123456789abcdef"

// serve starts a server for the route on a loopback listener.
func serve(t *testing.T, route *egress.Route, netw muster.Network, ledger *egress.Ledger) (*egress.Server, *clitest.Recorder) {
	t.Helper()
	recs := &clitest.Recorder{}
	s := egress.New(egress.Options{Route: route, Network: netw, Report: recs.Emit, Ledger: ledger})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return s, recs
}

func mock(t *testing.T, script *mockllm.Script) *mockllm.Server {
	t.Helper()
	m, err := mockllm.Listen("127.0.0.1:0", script, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func route(t *testing.T, kind muster.ExecKind, base string, models ...string) *egress.Route {
	t.Helper()
	t.Setenv("EGRESS_TEST_KEY", realKey)
	spec := &muster.ExecutorSpec{Name: "x", Kind: kind, BaseURL: base, Models: models}
	r, err := egress.RouteFor(spec, "", "EGRESS_TEST_KEY")
	if err != nil || r == nil {
		t.Fatalf("route: %v %v", r, err)
	}
	return r
}

func post(t *testing.T, u, key, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

var usageScript = &mockllm.Script{Scenarios: []mockllm.Scenario{{Name: "default", Steps: []mockllm.Step{
	{Text: "hello", Usage: &mockllm.Usage{InputTokens: 120, OutputTokens: 7, CacheReadTokens: 30}},
}}}}

// The provider gets the real key, never the placeholder; the provider's
// usage is read from the response, streamed or not, in the Anthropic and
// OpenAI formats.
func TestModelEndpointAddsKeyAndMetersUsage(t *testing.T) {
	m := mock(t, usageScript)
	cases := []struct {
		kind       muster.ExecKind
		base, path string
		body       string
	}{
		{muster.ExecClaudeCode, m.URL + "/v1", "/v1/messages", `{"model":"m1","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`},
		{muster.ExecClaudeCode, m.URL + "/v1", "/v1/messages", `{"model":"m1","stream":true,"max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`},
		{muster.ExecCodex, m.URL + "/v1", "/v1/responses", `{"model":"m1","input":"hi"}`},
		{muster.ExecCodex, m.URL + "/v1", "/v1/responses", `{"model":"m1","stream":true,"input":"hi"}`},
		{muster.ExecPi, m.URL + "/v1", "/v1/chat/completions", `{"model":"m1","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	}
	for _, c := range cases {
		t.Run(string(c.kind)+c.path+fmt.Sprint(strings.Contains(c.body, "stream")), func(t *testing.T) {
			s, recs := serve(t, route(t, c.kind, c.base, "m1"), muster.Network{Policy: muster.NetProvider}, nil)
			resp, body := post(t, s.URL()+c.path, muster.PlaceholderKey, c.body)
			if resp.StatusCode != 200 || !strings.Contains(body, "hello") {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			reqs := m.Requests()
			last := reqs[len(reqs)-1]
			if last.KeyDigest != mockllm.KeyDigest(realKey) {
				t.Fatalf("the provider got key digest %q, want the real key's %q", last.KeyDigest, mockllm.KeyDigest(realKey))
			}
			us := recs.Of(muster.RecUsage)
			if len(us) != 1 || us[0].Source != muster.UsageProvider {
				t.Fatalf("usage records %+v", us)
			}
			want := muster.Usage{InputTokens: 120, OutputTokens: 7, CacheReadTokens: 30}
			if us[0].Usage != want {
				t.Fatalf("provider usage %+v, want %+v", us[0].Usage, want)
			}
			if got := s.Result(); got.Missing != 0 || len(got.Usage) != 1 {
				t.Fatalf("result %+v", got)
			}
		})
	}
}

// What is not an inference request of the kind, or asks for a model the
// executor does not offer, is refused and reported once.
func TestModelEndpointRefuses(t *testing.T) {
	m := mock(t, usageScript)
	s, recs := serve(t, route(t, muster.ExecClaudeCode, m.URL+"/v1", "m1"), muster.Network{}, nil)
	before := len(m.Requests())
	for i := 0; i < 3; i++ {
		resp, _ := post(t, s.URL()+"/v1/files", muster.PlaceholderKey, `{}`)
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("POST /v1/files: %d, want 403", resp.StatusCode)
		}
	}
	resp, _ := post(t, s.URL()+"/v1/messages", muster.PlaceholderKey, `{"model":"other","messages":[]}`)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("another model: %d, want 403", resp.StatusCode)
	}
	if n := len(m.Requests()); n != before {
		t.Fatalf("the provider got %d refused requests", n-before)
	}
	bl := recs.Of(muster.RecBlocked)
	if len(bl) != 1 || bl[0].Host != "127.0.0.1" || !strings.Contains(bl[0].Text, "not an inference request") {
		t.Fatalf("blocked records %+v: want one per host", bl)
	}
}

// Once the run's budget is spent, model requests get 429 with retry-after.
func TestModelEndpointBudgetSpent(t *testing.T) {
	m := mock(t, usageScript)
	ledger := egress.NewLedger(muster.RunConfig{BudgetTokens: 100})
	s, _ := serve(t, route(t, muster.ExecCodex, m.URL+"/v1"), muster.Network{}, ledger)
	body := `{"model":"m1","input":"hi"}`
	if resp, _ := post(t, s.URL()+"/v1/responses", "x", body); resp.StatusCode != 200 {
		t.Fatalf("within budget: %d", resp.StatusCode)
	}
	ledger.Observe(muster.Usage{InputTokens: 100})
	resp, _ := post(t, s.URL()+"/v1/responses", "x", body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("budget spent: %d retry-after %q, want 429 with one", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// A stream without usage fields is counted as missing (provider usage
// unavailable); a 429 of the provider is seen with its retry-after.
func TestModelEndpointMissingUsageAndRateLimit(t *testing.T) {
	m := mock(t, &mockllm.Script{Scenarios: []mockllm.Scenario{
		{Name: "default", Steps: []mockllm.Step{{Raw: "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: [DONE]\n\n"}}},
		{Name: "limited", Match: "limit me", Steps: []mockllm.Step{{Status: 429, RetryAfter: "7"}}},
	}})
	s, _ := serve(t, route(t, muster.ExecPi, m.URL+"/v1"), muster.Network{}, nil)
	post(t, s.URL()+"/v1/chat/completions", "x", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	resp, _ := post(t, s.URL()+"/v1/chat/completions", "x", `{"model":"m","messages":[{"role":"user","content":"limit me"}]}`)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	got := s.Result()
	if got.Missing != 1 || !got.RateLimited || got.RetryAfter.Seconds() != 7 {
		t.Fatalf("result %+v", got)
	}
}

// tlsServer is an HTTPS test server on loopback.
func tlsServer(t *testing.T, text string) *httptest.Server {
	t.Helper()
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, text) }))
	t.Cleanup(ts.Close)
	return ts
}

// client is an HTTP client whose proxy is the server's.
func client(t *testing.T, s *egress.Server, ts *httptest.Server) *http.Client {
	pu, _ := url.Parse(s.URL())
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	if ts != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// Through the proxy an allowlisted host is reached (CONNECT and plain),
// another is refused and reported; a loopback address is refused even
// under "open" unless allow_hosts names it literally.
func TestProxyAllowlist(t *testing.T) {
	allowed := tlsServer(t, "allowed")
	other := tlsServer(t, "other")
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "plain") }))
	t.Cleanup(plain.Close)
	au, _ := url.Parse(allowed.URL)
	pu, _ := url.Parse(plain.URL)
	s, recs := serve(t, nil, muster.Network{Policy: muster.NetAllowlist, AllowHosts: []string{au.Host, pu.Host}}, nil)

	get := func(c *http.Client, u string) (int, string) {
		resp, err := c.Get(u)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(client(t, s, allowed), allowed.URL); code != 200 || body != "allowed" {
		t.Fatalf("allowlisted host through CONNECT: %d %q", code, body)
	}
	if code, body := get(client(t, s, nil), plain.URL); code != 200 || body != "plain" {
		t.Fatalf("allowlisted host, plain HTTP: %d %q", code, body)
	}
	if code, body := get(client(t, s, other), other.URL); code == 200 {
		t.Fatalf("a host not on the list was reached: %q", body)
	}
	ou, _ := url.Parse(other.URL)
	bl := recs.Of(muster.RecBlocked)
	if len(bl) != 1 || net.JoinHostPort(bl[0].Host, fmt.Sprint(bl[0].Port)) != ou.Host {
		t.Fatalf("blocked %+v, want %s", bl, ou.Host)
	}

	open, recs2 := serve(t, nil, muster.Network{Policy: muster.NetOpen}, nil)
	if code, body := get(client(t, open, other), other.URL); code == 200 {
		t.Fatalf("a loopback address was reached under open: %q", body)
	}
	if bl := recs2.Of(muster.RecBlocked); len(bl) != 1 || !strings.Contains(bl[0].Text, "loopback") {
		t.Fatalf("blocked %+v, want the loopback refusal", bl)
	}
	// A name that resolves to loopback is refused the same way.
	lh := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	if code, _ := get(client(t, open, nil), strings.Replace(plain.URL, "127.0.0.1", "localhost", 1)); code == 200 {
		t.Fatalf("localhost was reached under open (%s)", lh)
	}
}

// [gates] host_ports opens a loopback port of the host whatever the
// policy; other ports stay refused.
func TestProxyHostPorts(t *testing.T) {
	db := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "db") }))
	t.Cleanup(db.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "other") }))
	t.Cleanup(other.Close)
	du, _ := url.Parse(db.URL)
	port := du.Port()
	n := 0
	fmt.Sscan(port, &n)
	s, recs := serve(t, nil, muster.Network{Policy: muster.NetNone, HostPorts: []int{n}}, nil)
	c := client(t, s, nil)
	resp, err := c.Get(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "db" {
		t.Fatalf("host port: %d %q", resp.StatusCode, b)
	}
	if resp, err := c.Get(other.URL); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("another host port was reached")
		}
	}
	if bl := recs.Of(muster.RecBlocked); len(bl) != 1 {
		t.Fatalf("blocked %+v", bl)
	}
}

// The provider policy lets nothing through the proxy.
func TestProxyProviderPolicyRefusesAll(t *testing.T) {
	target := tlsServer(t, "x")
	tu, _ := url.Parse(target.URL)
	s, recs := serve(t, nil, muster.Network{Policy: muster.NetProvider, AllowHosts: []string{tu.Host}}, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", tu.Host, tu.Host)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT under provider: %d", resp.StatusCode)
	}
	if bl := recs.Of(muster.RecBlocked); len(bl) != 1 {
		t.Fatalf("blocked %+v", bl)
	}
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// Some agents (Qwen Code) send every request through HTTP_PROXY, the
// endpoint's own too: a proxy request for the endpoint's address is the
// endpoint's, in absolute form as through a CONNECT tunnel; it is never
// refused as loopback.
func TestProxyRequestForTheEndpointItself(t *testing.T) {
	m := mock(t, usageScript)
	s, recs := serve(t, route(t, muster.ExecQwen, m.URL+"/v1", "m1"), muster.Network{Policy: muster.NetProvider}, nil)
	self, _ := url.Parse(s.URL())
	body := `{"model":"m1","messages":[{"role":"user","content":"hi"}]}`
	plain := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(self)}}
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+muster.PlaceholderKey)
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "hello") {
		t.Fatalf("through the proxy, absolute form: status %d: %s", resp.StatusCode, b)
	}
	// Through a CONNECT tunnel to the endpoint's own address.
	conn, err := net.Dial("tcp", self.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", self.Host, self.Host)
	br := bufio.NewReader(conn)
	cr, err := http.ReadResponse(br, nil)
	if err != nil || cr.StatusCode != 200 {
		t.Fatalf("CONNECT to itself: %v %v", err, cr)
	}
	req, _ = http.NewRequest(http.MethodPost, "http://"+self.Host+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	tr, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(tr.Body)
	if tr.StatusCode != 200 || !strings.Contains(string(b), "hello") {
		t.Fatalf("through a tunnel to itself: status %d: %s", tr.StatusCode, b)
	}
	if bl := recs.Of(muster.RecBlocked); len(bl) != 0 {
		t.Fatalf("the endpoint's own requests were reported blocked: %+v", bl)
	}
}

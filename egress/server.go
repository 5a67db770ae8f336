package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
)

// maxRequestBody bounds a model request muster reads to check its model.
const maxRequestBody = 32 << 20

// MaxInFlight bounds an invocation's model requests at the provider at
// once: the budget is checked before each, and usage is known only at
// each response's end, so an agent firing requests by the hundred would
// otherwise spend past the budget by all of them. Requests past it wait
// for a place, and are checked against the budget again when they get one.
const MaxInFlight = 16

// Options configure a Server.
type Options struct {
	// Route is where model requests go; nil: the invocation has no model
	// endpoint (a gate, a setup step, an agent whose policy is none).
	Route *Route
	// Network is the invocation's policy and allow_hosts for the proxy.
	Network muster.Network
	// Report receives blocked records and the provider's usage records
	// (one per response), from the server's goroutines; it must be safe
	// for concurrent use.
	Report func(muster.Record)
	// Ledger, when set, is the run's budget: once it is spent, model
	// requests get 429 with retry-after.
	Ledger *Ledger
	// Transport carries model requests to the provider (nil: a clone of
	// http.DefaultTransport).
	Transport http.RoundTripper
	// Resolver resolves names for the proxy (nil: net.DefaultResolver).
	Resolver *net.Resolver
}

// Server is one invocation's model endpoint and proxy.
type Server struct {
	opts   Options
	model  *httputil.ReverseProxy
	plain  *httputil.ReverseProxy
	dialer *guardDialer
	srv    *http.Server
	addr   string
	// self are the addresses of the listeners served: a proxy request
	// for one of them is a request to the endpoint itself.
	self map[string]bool

	// inflight holds a place per model request at the provider.
	inflight chan struct{}

	mu      sync.Mutex
	blocked map[string]bool
	usage   []muster.Record // the provider's, per response
	missing int             // inference responses without usage fields
	limited time.Duration   // the longest retry-after of a 429 seen; -1: a 429 without one
	saw429  bool
	wg      sync.WaitGroup
}

// New returns a server for opts; Serve puts it on a listener.
func New(opts Options) *Server {
	s := &Server{opts: opts, blocked: map[string]bool{}, inflight: make(chan struct{}, MaxInFlight)}
	s.dialer = &guardDialer{net: opts.Network, resolver: opts.Resolver, refuse: s.block}
	if opts.Route != nil {
		tr := opts.Transport
		if tr == nil {
			tr = http.DefaultTransport.(*http.Transport).Clone()
		}
		s.model = &httputil.ReverseProxy{
			Rewrite:        s.rewriteModel,
			Transport:      tr,
			FlushInterval:  -1,
			ModifyResponse: s.meterResponse,
			ErrorHandler:   proxyError,
		}
	}
	s.plain = &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.Out.URL = pr.In.URL; pr.Out.Host = pr.In.URL.Host },
		Transport:     &http.Transport{DialContext: s.dialer.DialContext, Proxy: nil, ForceAttemptHTTP2: false, ResponseHeaderTimeout: 5 * time.Minute},
		FlushInterval: -1,
		ErrorHandler:  proxyError,
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	return s
}

// Serve serves the endpoint and the proxy on ln until Close; it returns
// at once. It may be called for more than one listener (the host's
// loopback and the bridge of a network namespace).
func (s *Server) Serve(ln net.Listener) {
	s.mu.Lock()
	if s.addr == "" {
		s.addr = ln.Addr().String()
	}
	if s.self == nil {
		s.self = map[string]bool{}
	}
	s.self[ln.Addr().String()] = true
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
}

// URL is "http://ADDR" of the first listener served.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr
}

// Close stops the server: tunnels are cut (the invocation has ended),
// requests under way get a moment to finish (a response whose agent is
// gone ends at once; its usage is read by then), the rest are cut, and
// Close waits for its goroutines.
func (s *Server) Close() error {
	s.dialer.closeAll()
	ctx, cancel := context.WithTimeout(context.Background(), closeGrace)
	_ = s.srv.Shutdown(ctx)
	cancel()
	err := s.srv.Close()
	s.dialer.closeAll()
	s.plain.Transport.(*http.Transport).CloseIdleConnections()
	s.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// ServeHTTP tells a proxy request (CONNECT, or an absolute URL) from a
// model request (a path on the endpoint).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect && s.isSelf(r.Host):
		s.tunnelToSelf(w)
	case r.URL.IsAbs() && r.URL.Scheme == "http" && s.isSelf(r.URL.Host):
		// An agent that sends everything through HTTP_PROXY, the
		// endpoint's requests too (Qwen Code): the endpoint's own.
		r.URL.Scheme, r.URL.Host = "", ""
		r.Header.Del("Proxy-Authorization")
		r.Header.Del("Proxy-Connection")
		s.ServeHTTP(w, r)
	case r.Method == http.MethodConnect:
		s.connect(w, r)
	case r.URL.IsAbs():
		s.proxyPlain(w, r)
	case s.model == nil:
		s.refuse(w, r.Host, "no model endpoint for this invocation")
	default:
		s.serveModel(w, r)
	}
}

// isSelf reports whether hostport is one of the listeners served (the
// port given, the host a loopback name or address).
func (s *Server) isSelf(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.self[net.JoinHostPort(host, port)]
}

// tunnelToSelf answers a CONNECT to the endpoint's own address: the
// tunnel's requests are served by the endpoint, as if sent to it.
func (s *Server) tunnelToSelf(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		writeError(w, http.StatusInternalServerError, "muster: cannot tunnel")
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		conn.Close()
		return
	}
	s.dialer.track(conn)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.dialer.untrack(conn)
		one := &oneConn{conn: &bufferedConn{Conn: conn, r: rw.Reader}, done: make(chan struct{})}
		inner := &http.Server{Handler: s, ReadHeaderTimeout: s.srv.ReadHeaderTimeout, ConnState: one.state}
		_ = inner.Serve(one)
	}()
}

// oneConn is a listener of one connection already accepted: Accept
// returns it once, then blocks until the connection is closed.
type oneConn struct {
	conn net.Conn
	once sync.Once
	done chan struct{}
	used bool
}

func (l *oneConn) Accept() (net.Conn, error) {
	if !l.used {
		l.used = true
		return l.conn, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConn) Addr() net.Addr { return l.conn.LocalAddr() }

func (l *oneConn) state(_ net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		l.Close()
	}
}

// bufferedConn reads first what the hijack had buffered.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// serveModel forwards an inference request of the route's models.
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request) {
	rt := s.opts.Route
	ok, model := rt.allowedPath(r.URL.Path)
	if !ok {
		s.refuse(w, rt.Upstream.Host, "not an inference request: "+r.Method+" "+bound(r.URL.Path, 80))
		return
	}
	if r.Body != nil && model == "" {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
		if err != nil || len(body) > maxRequestBody {
			http.Error(w, "muster: request body too large or unreadable", http.StatusRequestEntityTooLarge)
			return
		}
		if len(body) > 0 {
			m, err := requestModel(body)
			if err != nil && len(rt.Models) > 0 {
				s.refuse(w, rt.Upstream.Host, err.Error()+": its model cannot be checked")
				return
			}
			model = m
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	if !rt.allowedModel(model) {
		s.refuse(w, rt.Upstream.Host, "model "+bound(model, 80)+" is not one of the executor's")
		return
	}
	if s.budgetSpent(w) {
		return
	}
	select {
	case s.inflight <- struct{}{}:
		defer func() { <-s.inflight }()
	case <-r.Context().Done():
		return
	}
	if s.budgetSpent(w) { // spent while it waited for a place
		return
	}
	s.model.ServeHTTP(w, r)
}

// budgetSpent answers 429 with retry-after once the run's budget is spent.
func (s *Server) budgetSpent(w http.ResponseWriter) bool {
	if s.opts.Ledger == nil {
		return false
	}
	why := s.opts.Ledger.Spent()
	if why == "" {
		return false
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(BudgetRetryAfter/time.Second)))
	writeError(w, http.StatusTooManyRequests, "muster: "+why)
	return true
}

// closeGrace bounds how long Close waits for requests under way.
const closeGrace = 2 * time.Second

// BudgetRetryAfter is the retry-after of the 429 muster answers once the
// run's budget is spent.
const BudgetRetryAfter = 60 * time.Second

// rewriteModel sends the request to the provider with the real key.
func (s *Server) rewriteModel(pr *httputil.ProxyRequest) {
	rt := s.opts.Route
	up := rt.Upstream
	pr.Out.URL.Scheme, pr.Out.URL.Host = up.Scheme, up.Host
	pr.Out.Host = up.Host
	// The transport asks for compression itself and decompresses, so the
	// meter reads the provider's usage: an agent that asked for gzip
	// would otherwise blind it (and spend past the budget claiming none).
	pr.Out.Header.Del("Accept-Encoding")
	if rt.Key == "" {
		return // a subscription login: the agent's own authorization
	}
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key"} {
		pr.Out.Header.Del(h)
	}
	if q := pr.Out.URL.Query(); q.Has("key") {
		q.Del("key")
		pr.Out.URL.RawQuery = q.Encode()
	}
	if rt.Header == "Authorization" {
		pr.Out.Header.Set("Authorization", "Bearer "+rt.Key)
	} else {
		pr.Out.Header.Set(rt.Header, rt.Key)
	}
}

// meterResponse reads the provider's usage from an inference response as
// it streams, and remembers a 429's retry-after for the pacing rule.
func (s *Server) meterResponse(resp *http.Response) error {
	if resp.StatusCode == http.StatusTooManyRequests {
		s.rateLimited(resp.Header.Get("Retry-After"))
	}
	if resp.StatusCode/100 != 2 || resp.Request == nil || resp.Request.Method != http.MethodPost || strings.HasSuffix(resp.Request.URL.Path, "count_tokens") || strings.HasSuffix(resp.Request.URL.Path, ":countTokens") {
		return nil
	}
	ct := resp.Header.Get("Content-Type")
	m := &meter{api: s.opts.Route.API, stream: strings.Contains(ct, "event-stream") || strings.Contains(ct, "ndjson") || strings.Contains(ct, "jsonl")}
	m.done = s.metered
	resp.Body = &usageBody{rc: resp.Body, m: m}
	return nil
}

// metered records the usage of one response, or that it had none.
func (s *Server) metered(m *meter) {
	s.mu.Lock()
	if !m.found {
		s.missing++
		s.mu.Unlock()
		return
	}
	u, _ := m.u.Sane()
	rec := muster.Record{Type: muster.RecUsage, Model: bound(m.model, 100), Usage: u, Source: muster.UsageProvider}
	s.usage = append(s.usage, rec)
	s.mu.Unlock()
	s.opts.Ledger.count(m.model, u)
	if s.opts.Report != nil {
		s.opts.Report(rec)
	}
}

func (s *Server) rateLimited(retryAfter string) {
	d := parseRetryAfter(retryAfter, time.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saw429 = true
	if d > s.limited {
		s.limited = d
	}
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 && n < 86400 {
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// refuse answers 403 and reports the host once.
func (s *Server) refuse(w http.ResponseWriter, hostport, why string) {
	s.block(hostport, why)
	writeError(w, http.StatusForbidden, "muster: refused: "+why+" (docs/security.md)")
}

// block reports a refused host:port once per server.
func (s *Server) block(hostport, why string) {
	host, port := splitHostPort(hostport)
	key := net.JoinHostPort(host, strconv.Itoa(port))
	s.mu.Lock()
	if s.blocked[key] || len(s.blocked) >= maxBlocked {
		s.mu.Unlock()
		return
	}
	s.blocked[key] = true
	s.mu.Unlock()
	if s.opts.Report != nil {
		s.opts.Report(muster.Record{Type: muster.RecBlocked, Host: host, Port: port, Text: bound(why, 100)})
	}
}

// maxBlocked bounds the distinct hosts one server reports.
const maxBlocked = 100

func splitHostPort(hp string) (string, int) {
	host, p, err := net.SplitHostPort(hp)
	if err != nil {
		return strings.Trim(hp, "[]"), 0
	}
	n, _ := strconv.Atoi(p)
	return host, n
}

// Result is what the server saw of an invocation's model requests.
type Result struct {
	// Usage is the provider's usage, one record per response.
	Usage []muster.Record
	// Missing counts inference responses that carried no usage fields.
	Missing int
	// RateLimited says the provider answered 429; RetryAfter is the
	// longest retry-after it named.
	RateLimited bool
	RetryAfter  time.Duration
}

// Result returns what the server saw so far.
func (s *Server) Result() Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Result{Usage: append([]muster.Record(nil), s.usage...), Missing: s.missing, RateLimited: s.saw429, RetryAfter: s.limited}
}

func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	var refused *refusedError
	if errors.As(err, &refused) {
		writeError(w, http.StatusForbidden, "muster: refused: "+refused.Error())
		return
	}
	writeError(w, http.StatusBadGateway, "muster: the upstream could not be reached: "+bound(err.Error(), 200))
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": "muster_refused", "message": msg}})
	_, _ = w.Write(b)
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

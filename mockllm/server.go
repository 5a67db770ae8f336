package mockllm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one request the server received, for tests and logs. Secret
// headers (authorization, x-api-key, x-goog-api-key, cookie) are redacted.
type Request struct {
	Method   string      `json:"method"`
	Path     string      `json:"path"`
	Query    string      `json:"query,omitempty"`
	Header   http.Header `json:"header,omitempty"`
	Body     string      `json:"body,omitempty"`
	API      string      `json:"api,omitempty"` // anthropic, responses, chat, gemini
	Scenario string      `json:"scenario,omitempty"`
	Step     int         `json:"step"` // 0-based step served (-1: none)
	// KeyDigest is KeyDigest of the key the request carried (x-api-key,
	// x-goog-api-key, api-key or a bearer authorization), so a test can
	// tell which key reached the provider without the log holding it.
	KeyDigest string `json:"key_digest,omitempty"`
}

// KeyDigest is the first 16 hex digits of the SHA-256 of key; "" for no
// key.
func KeyDigest(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// requestKey is the key a request carries, whatever its API.
func requestKey(h http.Header) string {
	for _, k := range []string{"X-Api-Key", "X-Goog-Api-Key", "Api-Key"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	a := h.Get("Authorization")
	if v, ok := strings.CutPrefix(a, "Bearer "); ok {
		return v
	}
	return a
}

// MaxKept bounds the requests kept in memory; past it the oldest half is
// dropped (the log file, when set, keeps everything).
const MaxKept = 2000

// Handler serves the four APIs from a script. Its zero value is not
// usable; call New.
type Handler struct {
	script *Script
	log    io.Writer // JSON lines of requests, or nil

	mu       sync.Mutex
	requests []Request
	used     map[string]int // "scenario/step" -> errors served (Times)
	ids      atomic.Int64
}

// New returns a handler answering from script (nil: every request gets
// "OK"). When log is not nil each request is written to it as a JSON line.
func New(script *Script, log io.Writer) *Handler {
	if script == nil {
		script = &Script{}
	}
	return &Handler{script: script, log: log, used: map[string]int{}}
}

// Requests returns a copy of the requests received so far.
func (h *Handler) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Request(nil), h.requests...)
}

// Server is a Handler listening on 127.0.0.1.
type Server struct {
	*Handler
	// URL is "http://127.0.0.1:PORT" (no trailing slash, no /v1).
	URL  string
	srv  *http.Server
	done chan struct{}
}

// Listen serves script on addr, which must be a loopback address
// ("127.0.0.1:0" picks a free port; an empty host means 127.0.0.1).
func Listen(addr string, script *Script, log io.Writer) (*Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("mock-llm address %q: %w", addr, err)
	}
	if host == "" || host == "localhost" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("mock-llm address %q: only loopback addresses are allowed", addr)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, err
	}
	h := New(script, log)
	s := &Server{Handler: h, URL: "http://" + ln.Addr().String(), done: make(chan struct{})}
	s.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	// The serving goroutine lives until Close.
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the server and waits for it.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return nil
}

// ServeHTTP routes a request to its API. Paths may omit the /v1 prefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: redact(r.Header), Body: string(body), Step: -1, KeyDigest: KeyDigest(requestKey(r.Header))}
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodGet && (path == "/models" || path == "beta/models"):
		h.record(&rec)
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{"id": "mock-model", "object": "model"}}})
	case r.Method != http.MethodPost:
		h.record(&rec)
		http.NotFound(w, r)
	case path == "/messages/count_tokens":
		h.record(&rec)
		writeJSON(w, 200, map[string]any{"input_tokens": len(body) / 4})
	case path == "/messages":
		rec.API = "anthropic"
		h.serve(w, r, &rec, body, parseAnthropic, writeAnthropic)
	case path == "/responses":
		rec.API = "responses"
		h.serve(w, r, &rec, body, parseResponses, writeResponses)
	case path == "/chat/completions":
		rec.API = "chat"
		h.serve(w, r, &rec, body, parseChat, writeChat)
	case strings.HasPrefix(path, "beta/models/"):
		rec.API = "gemini"
		model, method, _ := strings.Cut(strings.TrimPrefix(path, "beta/models/"), ":")
		t := func(b []byte) (*turn, error) {
			tn, err := parseGemini(b)
			if tn != nil {
				tn.model = model
				tn.stream = method == "streamGenerateContent"
			}
			return tn, err
		}
		h.serve(w, r, &rec, body, t, writeGemini)
	default:
		h.record(&rec)
		http.NotFound(w, r)
	}
}

func (h *Handler) record(rec *Request) {
	h.mu.Lock()
	h.requests = append(h.requests, *rec)
	if len(h.requests) > MaxKept {
		h.requests = append(h.requests[:0], h.requests[len(h.requests)-MaxKept/2:]...)
	}
	log := h.log
	h.mu.Unlock()
	if log != nil {
		b, _ := json.Marshal(rec)
		h.mu.Lock()
		_, _ = log.Write(append(b, '\n'))
		h.mu.Unlock()
	}
}

func redact(in http.Header) http.Header {
	out := in.Clone()
	for _, k := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Cookie", "Api-Key"} {
		if out.Get(k) != "" {
			out.Set(k, "[redacted]")
		}
	}
	return out
}

// turn is what the server needs to know of a request, whatever its API.
type turn struct {
	model  string
	prompt string // text of the latest user prompt (not tool results)
	step   int    // tool-result turns since that prompt
	tools  bool   // the request offers tools
	stream bool
	size   int // request body bytes
	cwd    string
}

// reply is what the server answers, whatever the API.
type reply struct {
	id    string
	model string
	text  string
	calls []call
	usage Usage
	brk   bool
}

type call struct {
	id     string
	name   string
	args   string // JSON object
	custom string // Responses custom tool input (apply_patch)
	input  map[string]any
}

type (
	parseFunc func([]byte) (*turn, error)
	writeFunc func(w http.ResponseWriter, t *turn, rp *reply)
)

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, rec *Request, body []byte, parse parseFunc, write writeFunc) {
	t, err := parse(body)
	if err != nil {
		h.record(rec)
		writeError(w, rec.API, &Step{Status: 400, Error: "mock: " + err.Error()})
		return
	}
	t.size = len(body)
	t.cwd = findCwd(string(body))
	sc, idx, st := h.choose(t)
	if sc != nil {
		rec.Scenario = sc.Name
		rec.Step = idx
	}
	h.record(rec)
	if st != nil && st.DelayMS > 0 {
		select {
		case <-time.After(time.Duration(st.DelayMS) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
	if st != nil {
		for k, v := range st.Headers {
			w.Header().Set(k, v)
		}
		if st.RetryAfter != "" {
			w.Header().Set("Retry-After", st.RetryAfter)
		}
		if st.Raw != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, st.Raw)
			return
		}
		if st.Status != 0 && st.Status != 200 {
			writeError(w, rec.API, st)
			return
		}
	}
	w.Header().Set("Request-Id", fmt.Sprintf("req_mock%06d", h.ids.Add(1)))
	write(w, t, h.build(t, st))
}

// choose picks the scenario and step for a turn. Error steps with Times
// drop out of the list once served that often.
func (h *Handler) choose(t *turn) (*Scenario, int, *Step) {
	sc := h.script.find(t.prompt)
	if sc == nil {
		return nil, -1, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for i := range sc.Steps {
		st := &sc.Steps[i]
		key := sc.Name + "/" + strconv.Itoa(i)
		// A request offering no tools is a side request (a title, a
		// summary): it never uses up a limited error step.
		if st.Times > 0 && (h.used[key] >= st.Times || !t.tools) {
			continue
		}
		if n == t.step {
			if st.Times > 0 {
				h.used[key]++
			}
			return sc, i, st
		}
		n++
	}
	return sc, len(sc.Steps), nil
}

func (h *Handler) build(t *turn, st *Step) *reply {
	rp := &reply{id: fmt.Sprintf("%06d", h.ids.Add(1)), model: t.model}
	if rp.model == "" {
		rp.model = "mock-model"
	}
	if st == nil {
		rp.text = "Done."
	} else {
		rp.text = strings.ReplaceAll(st.Text, "{{cwd}}", t.cwd)
		rp.brk = st.Break
		if t.tools {
			for i, tc := range st.Tools {
				c := call{id: fmt.Sprintf("call_%s_%d", rp.id, i), name: tc.Name, custom: tc.Custom}
				in := fillCwd(tc.Input, t.cwd)
				if in == nil {
					in = map[string]any{}
				}
				if tc.Custom != "" && len(tc.Input) == 0 {
					in = map[string]any{"input": tc.Custom}
				}
				b, _ := json.Marshal(in)
				c.args, c.input = string(b), in
				rp.calls = append(rp.calls, c)
			}
		}
		if rp.text == "" && len(rp.calls) == 0 {
			rp.text = "OK"
		}
	}
	if st != nil && st.Usage != nil {
		rp.usage = *st.Usage
	} else {
		out := len(rp.text) / 4
		for _, c := range rp.calls {
			out += (len(c.args) + len(c.custom)) / 4
		}
		rp.usage = Usage{InputTokens: t.size / 4, OutputTokens: max(out, 1)}
	}
	return rp
}

func fillCwd(v map[string]any, cwd string) map[string]any {
	if v == nil {
		return nil
	}
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = fillAny(x, cwd)
	}
	return out
}

func fillAny(x any, cwd string) any {
	switch x := x.(type) {
	case string:
		return strings.ReplaceAll(x, "{{cwd}}", cwd)
	case map[string]any:
		return fillCwd(x, cwd)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fillAny(e, cwd)
		}
		return out
	}
	return x
}

// chunks splits text into a few pieces, to stream as deltas.
func chunks(s string) []string {
	const n = 16
	var out []string
	for len(s) > n {
		cut := n
		for cut < len(s) && !utf8Start(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events and flushes each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; name "" writes a data-only event.
func (s *sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sse) raw(line string) {
	fmt.Fprintf(s.w, "%s\n\n", line)
	if s.f != nil {
		s.f.Flush()
	}
}

// writeError answers with the step's status in the API's error shape.
func writeError(w http.ResponseWriter, api string, st *Step) {
	msg := st.Error
	if msg == "" {
		msg = http.StatusText(st.Status)
		if st.Status == 529 {
			msg = "Overloaded"
		}
	}
	typ := st.ErrorType
	switch api {
	case "anthropic":
		if typ == "" {
			typ = map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
				404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}[st.Status]
			if typ == "" {
				typ = "api_error"
			}
		}
		writeJSON(w, st.Status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	case "gemini":
		if typ == "" {
			typ = map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
				404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}[st.Status]
			if typ == "" {
				typ = "INTERNAL"
			}
		}
		writeJSON(w, st.Status, map[string]any{"error": map[string]any{"code": st.Status, "message": msg, "status": typ}})
	default:
		if typ == "" {
			typ = map[int]string{400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit_exceeded"}[st.Status]
			if typ == "" {
				typ = "server_error"
			}
		}
		writeJSON(w, st.Status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "code": typ}})
	}
}

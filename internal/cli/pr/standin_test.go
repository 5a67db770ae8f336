package pr_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// standIn is a local stand-in of the GitHub REST endpoints muster pr
// uses, in the spirit of cli/cli's httpmock: it keeps pull requests and
// comments in memory and records every request, so tests assert what
// muster asked.
type standIn struct {
	t      *testing.T
	srv    *httptest.Server
	token  string
	remote string // the bare repository behind the git remote

	mu       sync.Mutex
	requests []request
	pulls    []*pullJSON
	comments map[int][]string
	// Feedback the tests plant: failed check runs by commit, review
	// comments and reviews by pull request.
	checks         map[string][]map[string]any
	reviewComments map[int][]map[string]any
	reviews        map[int][]map[string]any
	// onCreate, when set, runs inside POST /pulls: before the pull
	// request exists when before is true (returning true, the request
	// fails and nothing is created), after it exists otherwise.
	onCreate func(before bool) bool
	// override, when set, answers a request first (returning true: it
	// answered), for tests of an API that misbehaves; set under mu.
	override func(w http.ResponseWriter, r *http.Request) bool
}

type request struct {
	Method, Path, Query, Auth string
	Body                      map[string]any
}

type pullJSON struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	State   string `json:"state"`
	Title   string `json:"title"`
	Body    string `json:"body"`
	Draft   bool   `json:"draft"`
	Merged  bool   `json:"merged"`
	Head    struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func newStandIn(t *testing.T, token string) *standIn {
	s := &standIn{t: t, token: token, comments: map[int][]string{}, checks: map[string][]map[string]any{},
		reviewComments: map[int][]map[string]any{}, reviews: map[int][]map[string]any{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API base, as GITHUB_API_URL.
func (s *standIn) URL() string { return s.srv.URL + "/api/v3" }

func (s *standIn) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if data, _ := io.ReadAll(r.Body); len(data) > 0 {
		_ = json.Unmarshal(data, &body)
	}
	s.mu.Lock()
	s.requests = append(s.requests, request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Auth: r.Header.Get("Authorization"), Body: body})
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	override := s.override
	s.mu.Unlock()
	if override != nil && override(w, r) {
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/v3")
	switch {
	case r.Method == "GET" && path == "/repos/octo/app":
		_, _ = io.WriteString(w, `{"id":1,"name":"app","full_name":"octo/app","owner":{"login":"octo"}}`)
	case r.Method == "GET" && path == "/repos/octo/app/pulls":
		s.list(w, r)
	case r.Method == "GET" && strings.HasPrefix(path, "/repos/octo/app/commits/"):
		s.commitFeedback(w, strings.TrimPrefix(path, "/repos/octo/app/commits/"))
	case r.Method == "GET" && strings.HasPrefix(path, "/repos/octo/app/pulls/") && (strings.HasSuffix(path, "/comments") || strings.HasSuffix(path, "/reviews")):
		s.pullFeedback(w, strings.TrimPrefix(path, "/repos/octo/app/pulls/"))
	case r.Method == "POST" && path == "/repos/octo/app/pulls":
		s.create(w, body)
	case r.Method == "PATCH" && strings.HasPrefix(path, "/repos/octo/app/pulls/"):
		s.edit(w, strings.TrimPrefix(path, "/repos/octo/app/pulls/"), body)
	case r.Method == "POST" && strings.HasPrefix(path, "/repos/octo/app/issues/") && strings.HasSuffix(path, "/comments"):
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(path, "/repos/octo/app/issues/"), "/comments"))
		s.mu.Lock()
		s.comments[n] = append(s.comments[n], fmt.Sprint(body["body"]))
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":1}`)
	default:
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
	}
}

func (s *standIn) commitFeedback(w http.ResponseWriter, rest string) {
	sha, what, _ := strings.Cut(rest, "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	var v any
	switch what {
	case "check-runs":
		v = map[string]any{"total_count": len(s.checks[sha]), "check_runs": nonNil(s.checks[sha])}
	case "status":
		v = map[string]any{"state": "success", "statuses": []any{}}
	default:
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	data, _ := json.Marshal(v)
	_, _ = w.Write(data)
}

func (s *standIn) pullFeedback(w http.ResponseWriter, rest string) {
	num, what, _ := strings.Cut(rest, "/")
	n, _ := strconv.Atoi(num)
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.reviewComments[n]
	if what == "reviews" {
		list = s.reviews[n]
	}
	data, _ := json.Marshal(nonNil(list))
	_, _ = w.Write(data)
}

func nonNil(l []map[string]any) []map[string]any {
	if l == nil {
		return []map[string]any{}
	}
	return l
}

func (s *standIn) list(w http.ResponseWriter, r *http.Request) {
	head := r.URL.Query().Get("head")
	_, branch, _ := strings.Cut(head, ":")
	s.mu.Lock()
	var out []*pullJSON
	for i := len(s.pulls) - 1; i >= 0; i-- {
		if p := s.pulls[i]; branch == "" || p.Head.Ref == branch {
			out = append(out, p)
		}
	}
	data, _ := json.Marshal(out)
	s.mu.Unlock()
	_, _ = w.Write(data)
}

func (s *standIn) create(w http.ResponseWriter, body map[string]any) {
	if s.onCreate != nil && s.onCreate(true) {
		http.Error(w, `{"message":"the client went away"}`, http.StatusBadGateway)
		return
	}
	s.mu.Lock()
	p := &pullJSON{Number: len(s.pulls) + 1, State: "open", Title: str(body["title"]), Body: str(body["body"])}
	p.HTMLURL = fmt.Sprintf("https://github.example/octo/app/pull/%d", p.Number)
	p.Draft, _ = body["draft"].(bool)
	head := str(body["head"])
	if _, b, ok := strings.Cut(head, ":"); ok {
		head = b
	}
	p.Head.Ref, p.Base.Ref = head, str(body["base"])
	p.Head.SHA = s.headSHA(head)
	s.pulls = append(s.pulls, p)
	data, _ := json.Marshal(p)
	s.mu.Unlock()
	if s.onCreate != nil {
		_ = s.onCreate(false)
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(data)
}

func (s *standIn) edit(w http.ResponseWriter, num string, body map[string]any) {
	n, _ := strconv.Atoi(num)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 1 || n > len(s.pulls) {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	p := s.pulls[n-1]
	if v, ok := body["title"]; ok {
		p.Title = str(v)
	}
	if v, ok := body["body"]; ok {
		p.Body = str(v)
	}
	if v, ok := body["state"]; ok {
		p.State = str(v)
	}
	if b, ok := body["base"].(map[string]any); ok {
		p.Base.Ref = str(b["ref"])
	}
	data, _ := json.Marshal(p)
	_, _ = w.Write(data)
}

// headSHA is where the bare remote's branch is, as GitHub reports a
// pull request's head.
func (s *standIn) headSHA(branch string) string {
	if s.remote == "" {
		return ""
	}
	out, _ := exec.Command("git", "--git-dir", s.remote, "rev-parse", "--verify", "-q", "refs/heads/"+branch).Output()
	return strings.TrimSpace(string(out))
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// count returns how many requests had method and a path ending in suffix.
func (s *standIn) count(method, suffix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

func (s *standIn) pull(n int) pullJSON {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.pulls[n-1]
}

func (s *standIn) numPulls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pulls)
}

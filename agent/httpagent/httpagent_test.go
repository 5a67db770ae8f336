package httpagent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	muster "github.com/muster-run/muster"
	"github.com/muster-run/muster/agent/httpagent"
	"github.com/muster-run/muster/mockllm"
	"github.com/muster-run/muster/mockllm/mockllmtest"
)

const (
	keyEnv = "MUSTERTEST_HTTPAGENT_KEY"
	secret = "sk-test-SECRETVALUE-0123456789"
)

// plainKeyEnv holds a key under a name the credential scrub does not catch.
const (
	plainKeyEnv = "MUSTERTESTCRED"
	plainSecret = "plainsecret-ABCDEF-424242"
)

func TestMain(m *testing.M) {
	os.Setenv(keyEnv, secret)
	os.Setenv(plainKeyEnv, plainSecret)
	os.Exit(m.Run())
}

func script() *mockllm.Script {
	return &mockllm.Script{Scenarios: []mockllm.Scenario{
		{Name: "edit", Steps: []mockllm.Step{
			{Text: "Let me look.", Tools: []mockllm.ToolCall{{Name: "read_file", Input: map[string]any{"path": "greet.txt"}}}},
			{Tools: []mockllm.ToolCall{{Name: "edit_file", Input: map[string]any{"path": "greet.txt", "old_string": "hello", "new_string": "hello, world"}}}},
			{Tools: []mockllm.ToolCall{
				{Name: "write_file", Input: map[string]any{"path": "sub/new.txt", "content": "new file\n"}},
				{Name: "list_files", Input: map[string]any{}},
			}, Usage: &mockllm.Usage{InputTokens: 50, OutputTokens: 5, CacheReadTokens: 10}},
			{Text: "All done: greet.txt edited, sub/new.txt written."},
		}},
		{Name: "shell", Steps: []mockllm.Step{
			{Tools: []mockllm.ToolCall{{Name: "run_command", Input: map[string]any{"command": "echo from-shell > shell.txt"}}}},
			{Text: "ran it"},
		}},
		{Name: "loop", Steps: []mockllm.Step{
			{Tools: []mockllm.ToolCall{{Name: "list_files"}}}, {Tools: []mockllm.ToolCall{{Name: "list_files"}}},
			{Tools: []mockllm.ToolCall{{Name: "list_files"}}}, {Text: "never reached"},
		}},
		{Name: "review", Steps: []mockllm.Step{
			{Tools: []mockllm.ToolCall{{Name: "report_findings", Input: map[string]any{"findings": []any{
				map[string]any{"severity": "major", "title": "greeting lacks a comma", "path": "greet.txt", "line": 1}}}}}},
			{Text: "Reviewed."},
		}},
		{Name: "satisfied", Steps: []mockllm.Step{
			{Tools: []mockllm.ToolCall{{Name: "task_satisfied", Input: map[string]any{"reason": "already says hello"}}}},
			{Text: "Nothing to do."},
		}},
		{Name: "leaky", Steps: []mockllm.Step{
			{Tools: []mockllm.ToolCall{{Name: "run_command", Input: map[string]any{"command": "env; echo \"v=$" + plainKeyEnv + "\""}}}},
			{Text: "The key is " + plainSecret + " and " + secret},
		}},
		{Name: "rate", Steps: []mockllm.Step{{Status: 429, RetryAfter: "7", Error: "slow down"}}},
		{Name: "overloaded", Steps: []mockllm.Step{{Status: 529}}},
		{Name: "flaky", Steps: []mockllm.Step{{Status: 503, Times: 1}, {Text: "recovered"}}},
		{Name: "auth", Steps: []mockllm.Step{{Status: 401, Error: "invalid x-api-key"}}},
		{Name: "invalid", Steps: []mockllm.Step{{Status: 400, Error: "model not found; your key " + secret + " is fine"}}},
		{Name: "usage", Steps: []mockllm.Step{{Status: 429, Error: "You have reached your usage limit. It resets at 2026-11-29T18:00:00Z."}}},
		{Name: "broken", Steps: []mockllm.Step{{Text: "this reply is cut off in the middle of the stream", Break: true}}},
		{Name: "garbage", Steps: []mockllm.Step{{Raw: "data: {not json\n\n"}}},
		{Name: "slow", Steps: []mockllm.Step{{Text: "late", DelayMS: 10000}}},
	}}
}

type rec struct {
	mu   sync.Mutex
	recs []muster.Record
}

func (r *rec) emit(x muster.Record) { r.mu.Lock(); r.recs = append(r.recs, x); r.mu.Unlock() }

func (r *rec) all() []muster.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]muster.Record(nil), r.recs...)
}

type setup struct {
	srv  *mockllm.Server
	exec *httpagent.Executor
	req  *muster.ExecRequest
	rec  *rec
}

func newSetup(t *testing.T, kind string, args ...string) *setup {
	t.Helper()
	srv := mockllmtest.Start(t, script())
	base := srv.URL + "/v1"
	if kind == "anthropic" {
		base = srv.URL
	}
	spec := &muster.ExecutorSpec{Name: "local", Kind: muster.ExecKind(kind), Model: "mock-model", BaseURL: base, APIKeyEnv: keyEnv,
		Args: append([]string{"--retry-delay=1ms"}, args...)}
	ex, err := httpagent.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := &muster.ExecRequest{Run: "r1", Task: &muster.Task{ID: "t1", Title: "greet"}, Spec: spec, Clone: 1, Attempt: 1,
		Dir: dir, Scratch: t.TempDir(), Authority: muster.AuthorityWrite}
	return &setup{srv: srv, exec: ex, req: req, rec: &rec{}}
}

func (s *setup) run(t *testing.T, scenario string) (*muster.ExecResult, error) {
	t.Helper()
	s.req.Prompt = "Edit greet.txt as asked. [scenario: " + scenario + "]"
	res, err := s.exec.Execute(context.Background(), s.req, s.rec.emit)
	s.checkNoSecret(t, res, err)
	return res, err
}

// checkNoSecret greps everything the agent produced for the API key.
func (s *setup) checkNoSecret(t *testing.T, res *muster.ExecResult, err error) {
	t.Helper()
	all := fmt.Sprintf("%+v %+v %v", s.rec.all(), res, err)
	if strings.Contains(all, secret) || strings.Contains(all, "SECRETVALUE") {
		t.Errorf("the API key leaked: %s", all)
	}
	for _, r := range s.srv.Requests() {
		if strings.Contains(r.Body, secret) {
			t.Errorf("the API key is in a request body")
		}
	}
}

var kinds = []struct {
	name, kind string
	args       []string
}{
	{"chat", "openai", nil},
	{"chat-nostream", "openai", []string{"--no-stream"}},
	{"responses", "openai", []string{"--api=responses"}},
	{"responses-nostream", "openai", []string{"--api=responses", "--no-stream"}},
	{"anthropic", "anthropic", nil},
	{"anthropic-nostream", "anthropic", []string{"--no-stream"}},
}

func TestMultiStepToolUse(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t, k.kind, k.args...)
			res, err := s.run(t, "edit")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(s.req.Dir, "greet.txt"))
			if string(b) != "hello, world\n" {
				t.Errorf("greet.txt = %q", b)
			}
			b, _ = os.ReadFile(filepath.Join(s.req.Dir, "sub/new.txt"))
			if string(b) != "new file\n" {
				t.Errorf("sub/new.txt = %q", b)
			}
			if !strings.Contains(res.Tail, "All done") {
				t.Errorf("tail %q", res.Tail)
			}
			var tools []string
			var usage muster.Usage
			for _, r := range s.rec.all() {
				switch r.Type {
				case muster.RecTool:
					tools = append(tools, r.Tool+":"+r.Args)
				case muster.RecUsage:
					usage.Add(r.Usage)
					if r.Model != "mock-model" {
						t.Errorf("usage model %q", r.Model)
					}
				}
			}
			if got := strings.Join(tools, ","); got != "read_file:greet.txt,edit_file:greet.txt,write_file:sub/new.txt,list_files:" {
				t.Errorf("tool records %s", got)
			}
			if usage.OutputTokens == 0 || usage.InputTokens == 0 || usage.CacheReadTokens != 10 || usage.CostMicros != 0 {
				t.Errorf("usage %+v", usage)
			}
			reqs := s.srv.Requests()
			if len(reqs) != 4 {
				t.Fatalf("%d model requests, want 4", len(reqs))
			}
			// The file's content went back to the model as the tool result.
			if !strings.Contains(reqs[1].Body, `hello\n`) {
				t.Errorf("read_file result not sent back: %s", reqs[1].Body)
			}
			if strings.Contains(reqs[0].Body, "run_command") {
				t.Error("run_command offered without shell authority")
			}
			auth := reqs[0].Header.Get("Authorization") + reqs[0].Header.Get("X-Api-Key")
			if auth != "[redacted]" {
				t.Errorf("no key sent: %q", auth)
			}
		})
	}
}

func TestShellOnlyWithAuthority(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "openai")
	if _, err := s.run(t, "shell"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.req.Dir, "shell.txt")); err == nil {
		t.Fatal("run_command ran without shell authority")
	}
	if body := s.srv.Requests()[1].Body; !strings.Contains(body, "no shell authority") {
		t.Errorf("refusal not reported to the model: %s", body)
	}

	s = newSetup(t, "anthropic")
	s.req.Authority = muster.AuthorityShell
	if _, err := s.run(t, "shell"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(s.req.Dir, "shell.txt"))
	if err != nil || string(b) != "from-shell\n" {
		t.Fatalf("shell.txt %q %v", b, err)
	}
}

func TestReviewerFindingsAndSatisfied(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "openai", "--api=responses")
	s.req.Role = muster.RoleReviewer
	s.req.DiffFile = filepath.Join(s.req.Scratch, "diff.patch")
	must(t, os.WriteFile(s.req.DiffFile, []byte("+hello-diff-marker\n"), 0o644))
	res, err := s.run(t, "review")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reviewed || len(res.Findings) != 1 || res.Findings[0].Severity != "major" || res.Findings[0].Line != 1 {
		t.Fatalf("result %+v", res)
	}
	if first := s.srv.Requests()[0].Body; !strings.Contains(first, "hello-diff-marker") || strings.Contains(first, "task_satisfied") {
		t.Errorf("reviewer request lacks the diff or offers task_satisfied")
	}

	s = newSetup(t, "anthropic")
	res, err = s.run(t, "satisfied")
	if err != nil || !res.Satisfied {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "openai")
	s.exec, _ = httpagent.New(&muster.ExecutorSpec{Name: "local", Kind: "openai", Model: "m", BaseURL: s.srv.URL + "/v1", APIKeyEnv: plainKeyEnv})
	s.req.Authority = muster.AuthorityShell
	res, err := s.run(t, "leaky")
	if err != nil {
		t.Fatal(err)
	}
	all := fmt.Sprintf("%+v %+v", s.rec.all(), res)
	if strings.Contains(all, plainSecret) || strings.Contains(all, secret) {
		t.Errorf("key in records or result: %s", all)
	}
	if !strings.Contains(all, "[redacted]") {
		t.Errorf("nothing redacted: %s", all)
	}
	if body := s.srv.Requests()[1].Body; strings.Contains(body, plainSecret) || !strings.Contains(body, "v=") {
		t.Errorf("run_command saw the key, or did not run")
	}
}

func TestTurnCap(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "openai", "--max-turns=2")
	_, err := s.run(t, "loop")
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailExit || !strings.Contains(ae.Message, "turn cap") {
		t.Fatalf("err = %v", err)
	}
	if n := len(s.srv.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestFailureClasses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		scenario string
		class    muster.FailureClass
		check    func(t *testing.T, ae *muster.AgentError, reqs int)
	}{
		{"rate", muster.FailRateLimit, func(t *testing.T, ae *muster.AgentError, _ int) {
			if ae.RetryAfter != 7*time.Second {
				t.Errorf("RetryAfter %v", ae.RetryAfter)
			}
		}},
		{"overloaded", muster.FailTransient, func(t *testing.T, _ *muster.AgentError, reqs int) {
			if reqs != 3 {
				t.Errorf("%d requests, want 1 + 2 retries", reqs)
			}
		}},
		{"auth", muster.FailAuth, func(t *testing.T, ae *muster.AgentError, reqs int) {
			if !strings.Contains(ae.Message, "invalid x-api-key") || reqs != 1 {
				t.Errorf("message %q, %d requests", ae.Message, reqs)
			}
		}},
		{"invalid", muster.FailInvalid, func(t *testing.T, ae *muster.AgentError, _ int) {
			if !strings.Contains(ae.Message, "model not found") || !strings.Contains(ae.Message, "[redacted]") {
				t.Errorf("message %q", ae.Message)
			}
		}},
		{"usage", muster.FailUsageLimit, func(t *testing.T, ae *muster.AgentError, _ int) {
			if want := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC); !ae.ResetAt.Equal(want) {
				t.Errorf("ResetAt %v", ae.ResetAt)
			}
		}},
		{"broken", muster.FailMalformed, nil},
		{"garbage", muster.FailMalformed, nil},
	}
	for _, k := range kinds {
		if strings.HasSuffix(k.name, "nostream") {
			continue
		}
		for _, c := range cases {
			t.Run(k.name+"/"+c.scenario, func(t *testing.T) {
				t.Parallel()
				s := newSetup(t, k.kind, k.args...)
				_, err := s.run(t, c.scenario)
				var ae *muster.AgentError
				if !errors.As(err, &ae) || ae.Class != c.class {
					t.Fatalf("err = %v, want class %s", err, c.class)
				}
				if c.check != nil {
					c.check(t, ae, len(s.srv.Requests()))
				}
			})
		}
	}
}

func TestTransientRetriedThenSucceeds(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "anthropic")
	res, err := s.run(t, "flaky")
	if err != nil || !strings.Contains(res.Tail, "recovered") {
		t.Fatalf("res %+v err %v", res, err)
	}
}

func TestNetworkErrorIsTransient(t *testing.T) {
	t.Parallel()
	srv, err := mockllm.Listen("127.0.0.1:0", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := srv.URL
	srv.Close()
	spec := &muster.ExecutorSpec{Name: "x", Kind: "openai", Model: "m", BaseURL: url, Args: []string{"--retries=0"}}
	ex, err := httpagent.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ex.Execute(context.Background(), &muster.ExecRequest{Spec: spec, Dir: t.TempDir(), Prompt: "x"}, nil)
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailTransient {
		t.Fatalf("err = %v", err)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "openai")
	s.req.Timeout = 200 * time.Millisecond
	_, err := s.run(t, "slow")
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailTimeout {
		t.Fatalf("err = %v, want timeout", err)
	}

	s = newSetup(t, "anthropic")
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("interrupted by test")
	s.req.Prompt = "[scenario: slow]"
	go func() {
		for len(s.srv.Requests()) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel(cause)
	}()
	_, err = s.exec.Execute(ctx, s.req, nil)
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the cause", err)
	}
}

func TestStall(t *testing.T) {
	t.Parallel()
	s := newSetup(t, "anthropic", "--idle-timeout=100ms")
	_, err := s.run(t, "slow")
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailStall {
		t.Fatalf("err = %v, want a stall", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, spec := range []*muster.ExecutorSpec{
		{Name: "a", Kind: "openai"},
		{Name: "b", Kind: "openai", Model: "m", Args: []string{"--api=soap"}},
		{Name: "c", Kind: "anthropic", Model: "m", Args: []string{"--api=responses"}},
		{Name: "d", Kind: "openai", Model: "m", Args: []string{"--max-turns=x"}},
		{Name: "e", Kind: "gemini", Model: "m"},
		{Name: "f", Kind: "openai", Model: "m", BaseURL: "/v1"},
		{Name: "g", Kind: "anthropic", Model: "m", BaseURL: "localhost:8080"},
	} {
		if _, err := httpagent.New(spec); err == nil {
			t.Errorf("%s: accepted %+v", spec.Name, spec)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	got := httpagent.Redact("key abc123secret and sk-proj-abcdefghijkl here", "abc123secret")
	if strings.Contains(got, "abc123secret") || strings.Contains(got, "sk-proj") {
		t.Fatalf("Redact = %q", got)
	}
}

// BenchmarkToolLoop runs the four-request edit task against the mock.
func BenchmarkToolLoop(b *testing.B) {
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			srv := mockllmtest.Start(b, script())
			base := srv.URL + "/v1"
			if k.kind == "anthropic" {
				base = srv.URL
			}
			spec := &muster.ExecutorSpec{Name: "b", Kind: muster.ExecKind(k.kind), Model: "m", BaseURL: base, Args: k.args}
			ex, err := httpagent.New(spec)
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			req := &muster.ExecRequest{Spec: spec, Dir: dir, Prompt: "[scenario: edit]"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := os.WriteFile(filepath.Join(dir, "greet.txt"), []byte("hello\n"), 0o644); err != nil {
					b.Fatal(err)
				}
				if _, err := ex.Execute(context.Background(), req, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

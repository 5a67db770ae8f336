package agentkit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		status int
		text   string
		class  muster.FailureClass
		retry  time.Duration
		reset  time.Time
	}{
		{429, "Rate limit exceeded, retry after 7 seconds", muster.FailRateLimit, 7 * time.Second, time.Time{}},
		{0, "exceeded retry limit, last status: 429 Too Many Requests", muster.FailRateLimit, 0, time.Time{}},
		{0, "[API Error: Rate limit exceeded, retry after 7 seconds]\nPlease wait and try again later. To increase your limits, request a quota increase through AI Studio", muster.FailRateLimit, 7 * time.Second, time.Time{}},
		{0, "rate limited; try again in 1m30s", muster.FailRateLimit, 90 * time.Second, time.Time{}},
		{429, "You have reached your usage limit. Your limit resets at 9pm (UTC).", muster.FailUsageLimit, 0, time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)},
		{0, "Claude AI usage limit reached|1796000000", muster.FailUsageLimit, 0, time.Unix(1796000000, 0).UTC()},
		{0, "You've hit your usage limit. Try again in 2 days 3 hours.", muster.FailUsageLimit, 0, now.Add(51 * time.Hour)},
		{0, "usage limit reached, resets 8am", muster.FailUsageLimit, 0, time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)},
		{0, "5-hour limit reached ∙ resets 3pm", muster.FailUsageLimit, 0, time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)},
		{0, "You've hit your limit · resets 11am", muster.FailUsageLimit, 0, time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)},
		{0, "You've hit your usage limit. Upgrade to Pro, or try again at 8:05 PM.", muster.FailUsageLimit, 0, time.Date(2026, 11, 29, 20, 5, 0, 0, time.UTC)},
		{0, "You've hit your usage limit. Upgrade to Pro, or try again in 3 days 4 hours 11 minutes.", muster.FailUsageLimit, 0, now.Add(76*time.Hour + 11*time.Minute)},
		{401, "Invalid API key · Fix external API key", muster.FailAuth, 0, time.Time{}},
		{0, "unexpected status 401 Unauthorized: invalid x-api-key", muster.FailAuth, 0, time.Time{}},
		{0, `[API Error: {"error":{"code":401,"message":"invalid x-api-key"}}]`, muster.FailAuth, 0, time.Time{}},
		// Issue 25 item 6: 403, and the CLIs' own words without a status.
		{403, "Forbidden", muster.FailAuth, 0, time.Time{}},
		{0, "API Error: 403 Forbidden: your key lacks access", muster.FailAuth, 0, time.Time{}},
		{0, "Invalid API key · Please run /login", muster.FailAuth, 0, time.Time{}},
		{0, "Not logged in · Please run /login", muster.FailAuth, 0, time.Time{}},
		{0, "Error: not logged in. Run codex login.", muster.FailAuth, 0, time.Time{}},
		{0, "Incorrect API key provided: sk-xxxx. (invalid_api_key)", muster.FailAuth, 0, time.Time{}},
		{0, "API key not valid. Please pass a valid API key.", muster.FailAuth, 0, time.Time{}},
		{500, "API Error: 500 internal failure", muster.FailTransient, 0, time.Time{}},
		{0, "We’re currently experiencing high demand, which may cause temporary errors.", muster.FailTransient, 0, time.Time{}},
		{0, "stream disconnected before completion", muster.FailTransient, 0, time.Time{}},
		{400, "prompt is too long", muster.FailInvalid, 0, time.Time{}},
		{0, "invalid_request_error: model not found", muster.FailInvalid, 0, time.Time{}},
		{0, "something odd", muster.FailExit, 0, time.Time{}},
	}
	for _, c := range cases {
		e := Classify(c.status, 1, c.text, now)
		if e.Class != c.class || e.RetryAfter != c.retry || !e.ResetAt.Equal(c.reset) {
			t.Errorf("Classify(%d, %q) = %s retry %v reset %v; want %s %v %v", c.status, c.text, e.Class, e.RetryAfter, e.ResetAt, c.class, c.retry, c.reset)
		}
	}
}

func TestResetTimeZone(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) // 13:00 in Rome
	got := ResetTime("limit reached, resets 8:20am (Europe/Rome)", now)
	rome, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip("no zoneinfo")
	}
	want := time.Date(2026, 11, 30, 8, 20, 0, 0, rome)
	if !got.Equal(want) {
		t.Errorf("got %v want %v", got, want)
	}
}

func TestParseFindings(t *testing.T) {
	cases := []struct {
		text string
		n    int
		ok   bool
	}{
		{"ok\n```muster-findings\n{\"findings\": []}\n```", 0, true},
		{"```json\n{\"findings\": [{\"severity\": \"MAJOR\", \"title\": \"x\"}]}\n```", 1, true},
		{"I found {\"findings\": [{\"severity\": \"weird\", \"title\": \"y\"}, {\"severity\": \"minor\"}]} there", 1, true},
		{"no block at all {\"other\": 1}", 0, false},
	}
	for _, c := range cases {
		f, ok := ParseFindings(c.text)
		if ok != c.ok || len(f) != c.n {
			t.Errorf("ParseFindings(%q) = %+v, %v", c.text, f, ok)
		}
		for _, x := range f {
			if x.Severity != "critical" && x.Severity != "major" && x.Severity != "minor" {
				t.Errorf("severity %q", x.Severity)
			}
		}
	}
	if !Satisfied("Already done.\n{\"type\":\"satisfied\"}") || Satisfied("{\"type\":\"other\"}") {
		t.Error("Satisfied")
	}
}

func TestSummarize(t *testing.T) {
	cases := map[string]any{
		"ls -la":       map[string]any{"command": "ls  -la\n", "description": "list"},
		"/a/b.go":      `{"file_path":"/a/b.go","content":"x"}`,
		"a=1 b=x":      map[string]any{"b": "x", "a": 1},
		"":             nil,
		"not json at…": "not json at…",
	}
	for want, in := range cases {
		if got := Summarize(in); got != want {
			t.Errorf("Summarize(%v) = %q, want %q", in, got, want)
		}
	}
	if got := Summarize(strings.Repeat("é", 200)); len(got) > MaxArgs {
		t.Errorf("not clipped: %d", len(got))
	}
}

func TestEnvironScrubs(t *testing.T) {
	t.Setenv("MY_SECRET_TOKEN", "tok-1")
	t.Setenv("ANTHROPIC_BASE_URL", "http://elsewhere")
	t.Setenv("PLAIN_VAR", "kept")
	req := &muster.ExecRequest{Spec: &muster.ExecutorSpec{Env: map[string]string{"FROM_SPEC": "s"}}, Env: map[string]string{"FROM_REQ": "r"}}
	env := Environ("/h", map[string]string{"KIND_VAR": "k"}, req)
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := m[k]; dup {
			t.Errorf("duplicate %s", k)
		}
		m[k] = v
	}
	for k, v := range map[string]string{"HOME": "/h", "KIND_VAR": "k", "FROM_SPEC": "s", "FROM_REQ": "r", "PLAIN_VAR": "kept"} {
		if m[k] != v {
			t.Errorf("%s = %q, want %q", k, m[k], v)
		}
	}
	for _, k := range []string{"MY_SECRET_TOKEN", "ANTHROPIC_BASE_URL"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s not scrubbed", k)
		}
	}
}

func TestHomeIsStablePerClone(t *testing.T) {
	root := t.TempDir()
	spec := &muster.ExecutorSpec{Name: "cl/aude"}
	a, err := Home(&muster.ExecRequest{Spec: spec, Clone: 2, Scratch: filepath.Join(root, "scratch", "a")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Home(&muster.ExecRequest{Spec: spec, Clone: 2, Scratch: filepath.Join(root, "scratch", "b")})
	c, _ := Home(&muster.ExecRequest{Spec: spec, Clone: 3, Scratch: filepath.Join(root, "scratch", "b")})
	if a != b || a == c || filepath.Base(a) != "cl_aude-2" {
		t.Errorf("homes %s %s %s", a, b, c)
	}
}

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func parseDone(line []byte, s *Stream) error {
	if strings.Contains(string(line), "done") {
		s.Done = true
		s.SetFinal(string(line))
		return nil
	}
	if !strings.HasSuffix(string(line), "}") {
		return errors.New("bad")
	}
	return nil
}

func TestRunStall(t *testing.T) {
	req := &muster.ExecRequest{Dir: t.TempDir(), Grace: 100 * time.Millisecond, Stall: 300 * time.Millisecond}
	inv := Invocation{Argv: []string{script(t, "echo '{}'\nexec sleep 30\n")}, Parse: parseDone}
	_, _, err := Run(context.Background(), req, inv, nil)
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailStall {
		t.Fatalf("err %v, want stall", err)
	}
}

func TestRunTimeoutAndCancel(t *testing.T) {
	req := &muster.ExecRequest{Dir: t.TempDir(), Grace: 100 * time.Millisecond, Timeout: 300 * time.Millisecond}
	inv := Invocation{Argv: []string{script(t, "exec sleep 30\n")}, Parse: parseDone}
	_, _, err := Run(context.Background(), req, inv, nil)
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailTimeout {
		t.Fatalf("err %v, want timeout", err)
	}
	cause := errors.New("stop now")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	req.Timeout = 0
	_, _, err = Run(ctx, req, inv, nil)
	if !errors.Is(err, cause) {
		t.Fatalf("err %v, want the cancel cause", err)
	}
}

func TestRunOutcomes(t *testing.T) {
	const secret = "sk-very-secret-value"
	cases := []struct {
		name  string
		body  string
		class muster.FailureClass // "" = success
	}{
		{"ok", "echo '{\"x\":\"done\"}'\n", ""},
		{"no final event", "echo '{}'\n", muster.FailMalformed},
		{"garbage and exit 1", "echo '{garbage'\nexit 1\n", muster.FailMalformed},
		{"auth on stderr", "echo 'error: 401 Unauthorized " + secret + "' >&2\nexit 1\n", muster.FailAuth},
		{"plain exit", "exit 3\n", muster.FailExit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := &muster.ExecRequest{Dir: t.TempDir(), Grace: time.Second}
			inv := Invocation{Argv: []string{script(t, c.body)}, Parse: parseDone, Secrets: []string{secret}}
			res, _, err := Run(context.Background(), req, inv, nil)
			if c.class == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ae *muster.AgentError
			if !errors.As(err, &ae) || ae.Class != c.class {
				t.Fatalf("err %v, want %s", err, c.class)
			}
			if strings.Contains(ae.Message, secret) || (res != nil && strings.Contains(res.Tail, secret)) {
				t.Error("secret not redacted")
			}
		})
	}
}

func TestRedact(t *testing.T) {
	s := NewStream(nil, "plainsecretvalue")
	in := "key sk-ant-api03-abcdefghijklmnopqrstuv and AIzaSyA1234567890abcdefghijklmnopqrstu, Authorization: Bearer abcdefghijklmnop1234, plainsecretvalue, sk-short"
	got := s.Redact(in)
	for _, leak := range []string{"sk-ant-api03", "AIzaSy", "abcdefghijklmnop1234", "plainsecretvalue"} {
		if strings.Contains(got, leak) {
			t.Errorf("%q left in %q", leak, got)
		}
	}
	if !strings.Contains(got, "sk-short") {
		t.Errorf("short text redacted: %q", got)
	}
}

func TestSecrets(t *testing.T) {
	req := &muster.ExecRequest{Spec: &muster.ExecutorSpec{Env: map[string]string{"OTHER_TOKEN": "t-1", "PLAIN": "p"}},
		Env: map[string]string{"X_SECRET": "s-1"}}
	got := strings.Join(Secrets(req, "k-1"), ",")
	for _, w := range []string{"k-1", "t-1", "s-1"} {
		if !strings.Contains(got, w) {
			t.Errorf("secrets %q lack %s", got, w)
		}
	}
	for _, v := range Secrets(req, "k-1") {
		if v == "p" {
			t.Errorf("plain value among secrets: %q", got)
		}
	}
}

// A missing agent CLI is named with the npm package that installs it, not
// a script that exists only in muster's own checkout.
func TestFindBinaryNamesThePackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, k := range Kinds {
		if k.Binary == "" {
			continue // kind acp: the executor names its program
		}
		_, err := FindBinary(nil, k.Binary, t.TempDir())
		if err == nil {
			continue // installed in this checkout's .cache/agents
		}
		if msg := err.Error(); !strings.Contains(msg, "npm install -g "+k.Package) || strings.Contains(msg, "install-agents") {
			t.Errorf("%s: %s", k.Name, msg)
		}
		if k.Package == "" {
			t.Errorf("%s has no npm package", k.Name)
		}
	}
	if _, err := FindBinary(nil, "no-such-agent", t.TempDir()); err == nil || strings.Contains(err.Error(), "npm") {
		t.Errorf("an unknown program gets no npm hint: %v", err)
	}
}

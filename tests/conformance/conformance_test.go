// Package conformance_test is the suite every agent kind runs against the
// mock model server (its own test binary: it takes minutes, most of it
// the agents' start-up).
package conformance_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/internal/agentkit/clitest"
	"github.com/muster-run/muster/internal/agents"
	"github.com/muster-run/muster/mockllm"
	"github.com/muster-run/muster/mockllm/mockllmtest"
)

// conformance is one executor kind as the suite drives it against the mock
// model server: the spec (the suite fills in the base URL and the
// program), the scenario that makes its agent write hello.txt, and the
// program when the kind has none of its own.
type conformance struct {
	spec    muster.ExecutorSpec
	urlPath string
	write   string
	program muster.ExecKind // kind acp: the ACP agent to run (found like a kind's)
}

var conformanceKinds = []conformance{
	{spec: muster.ExecutorSpec{Kind: muster.ExecClaudeCode, Model: "claude-sonnet-4-5"}, write: "claude-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecCodex, Model: "gpt-5.5"}, urlPath: "/v1", write: "codex-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecGemini, Model: "gemini-2.5-flash"}, write: "gemini-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecOpencode, Model: "anthropic/claude-sonnet-4-5"}, write: "opencode-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecPi, Model: "mock-model"}, urlPath: "/v1", write: "pi-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecACP, APIKeyEnv: "ANTHROPIC_API_KEY",
		Env: map[string]string{"IS_SANDBOX": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}}, write: "claude-write", program: muster.ExecClaudeACP},
	{spec: muster.ExecutorSpec{Kind: muster.ExecClaudeACP, Model: "claude-sonnet-4-5"}, write: "claude-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecCodexACP, Model: "gpt-5.5"}, urlPath: "/v1", write: "codex-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecGeminiACP, Model: "gemini-2.5-flash"}, write: "gemini-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecQwen, Model: "qwen3-coder"}, urlPath: "/v1", write: "gemini-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecCopilot, Model: "gpt-4.1"}, urlPath: "/v1", write: "copilot-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecOpenAI, Model: "gpt-mock"}, urlPath: "/v1", write: "http-write"},
	{spec: muster.ExecutorSpec{Kind: muster.ExecAnthropic, Model: "claude-mock"}, write: "http-write"},
}

// TestConformance runs every agent kind through the same checks against
// the mock model server: it starts and takes the prompt (the scenario the
// prompt names writes hello.txt), reports usage and tool events, keeps
// the key out of every record, tail and file (redaction), refuses to
// write with read authority, classifies an auth failure, stops at its
// timeout, and returns the cause when cancelled. A kind whose program is
// not installed is skipped with a message, except under CI=true. The
// command and sim kinds have their own suites (agent/agenttest, the
// engine's).
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every installed agent; skipped with -short")
	}
	covered := map[muster.ExecKind]bool{muster.ExecCommand: true, muster.ExecSim: true}
	for _, c := range conformanceKinds {
		covered[c.spec.Kind] = true
	}
	for _, k := range muster.Kinds {
		if !covered[k.Name] {
			t.Errorf("kind %s is not in the conformance suite", k.Name)
		}
	}
	// The kinds run in parallel (t.Setenv is not allowed then): each has
	// its own key variable and mock server.
	setenv(t, "XDG_CACHE_HOME", t.TempDir())
	for _, c := range conformanceKinds {
		t.Run(string(c.spec.Kind), func(t *testing.T) {
			t.Parallel()
			runConformance(t, c, false)
		})
		// Every kind that speaks HTTP to its provider passes the suite
		// behind muster's model endpoint too, as muster run puts it (the
		// generic acp kind is pointed at the mock by its env table here,
		// past the endpoint).
		if egress.Behind(c.spec.Kind) && c.spec.Kind != muster.ExecACP {
			t.Run(string(c.spec.Kind)+"/behind muster's endpoint", func(t *testing.T) {
				t.Parallel()
				runConformance(t, c, true)
			})
		}
	}
}

func runConformance(t *testing.T, c conformance, behind bool) {
	spec := c.spec
	spec.Name, spec.Clones = "conf", 1
	spec.Env = maps.Clone(spec.Env)
	key := "sk-conformance-secret-" + string(spec.Kind) + "-0123456789"
	if spec.APIKeyEnv == "" {
		spec.APIKeyEnv = "MUSTER_CONFORMANCE_KEY_" + strings.ToUpper(strings.ReplaceAll(string(spec.Kind), "-", "_"))
		if behind {
			spec.APIKeyEnv += "_BEHIND"
		}
	}
	switch {
	case c.program != "":
		spec.Command = []string{clitest.Binary(t, c.program)}
	case spec.Kind != muster.ExecOpenAI && spec.Kind != muster.ExecAnthropic:
		spec.Command = []string{clitest.Binary(t, spec.Kind)}
	}
	srv := mockllmtest.Start(t, clitest.Script())
	spec.BaseURL = srv.URL + c.urlPath
	if spec.Kind == muster.ExecACP {
		spec.Env["ANTHROPIC_BASE_URL"] = srv.URL
	}
	setenv(t, spec.APIKeyEnv, key)
	e, err := agents.New(&spec)
	if err != nil {
		t.Fatal(err)
	}
	if behind {
		e = egress.Wrap(e, &spec, &muster.Config{Executors: []*muster.ExecutorSpec{&spec}}, nil)
		t.Cleanup(func() {
			for _, r := range srv.Requests() {
				if r.API != "" && r.KeyDigest != mockllm.KeyDigest(key) {
					t.Errorf("%s reached the provider without the real key (digest %q)", r.Path, r.KeyDigest)
				}
			}
		})
	}
	l := &clitest.Live{Exec: e, Spec: &spec, Key: key, NoSession: spec.Kind == muster.ExecOpenAI || spec.Kind == muster.ExecAnthropic, Behind: behind}

	// Start, prompt, usage, tool events, session, redaction.
	l.Write(t, c.write, false)
	if len(l.Rec.Of(muster.RecTool)) == 0 {
		t.Errorf("no tool record")
	}
	t.Run("authority read refuses writes", func(t *testing.T) { l.Refuses(t, muster.AuthorityRead, c.write) })
	t.Run("failure class auth", func(t *testing.T) { l.Fails(t, "auth", 0, muster.FailAuth) })
	t.Run("timeout", func(t *testing.T) {
		req := slowRequest(t, l)
		req.Timeout = 4 * time.Second
		_, err := l.Exec.Execute(context.Background(), req, nil)
		clitest.WantClass(t, err, muster.FailTimeout)
	})
	t.Run("cancel", func(t *testing.T) {
		req := slowRequest(t, l)
		ctx, cancel := context.WithCancelCause(context.Background())
		timer := time.AfterFunc(4*time.Second, func() { cancel(muster.ErrInterrupted) })
		defer timer.Stop()
		start := time.Now()
		_, err := l.Exec.Execute(ctx, req, nil)
		if !errors.Is(err, muster.ErrInterrupted) {
			t.Fatalf("err %v, want the cancel's cause", err)
		}
		if d := time.Since(start); d > 4*time.Second+2*req.Grace+5*time.Second {
			t.Errorf("cancelled after %s", d)
		}
	})
}

// setenv sets an environment variable for the test (parallel tests may
// not use t.Setenv); every kind uses its own variable.
func setenv(t *testing.T, name, value string) {
	old, had := os.LookupEnv(name)
	if err := os.Setenv(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if had {
			_ = os.Setenv(name, old)
		} else {
			_ = os.Unsetenv(name)
		}
	})
}

// slowRequest is a request whose model reply takes 20 s, in a fresh
// repository.
func slowRequest(t *testing.T, l *clitest.Live) *muster.ExecRequest {
	req := clitest.Request(t, l.Spec, muster.RoleCoder, muster.AuthorityWrite, "Wait. [scenario: slow]")
	req.Dir = clitest.GitRepo(t)
	req.Grace = time.Second
	if err := os.MkdirAll(filepath.Join(req.Scratch), 0o755); err != nil {
		t.Fatal(err)
	}
	return req
}

// Package clitest helps test the agent CLI adapters: a fake CLI that
// replays a recorded stream and records its argv, environment and stdin;
// requests in temporary directories; the real CLIs found or skipped; and
// the mock model server's scenarios the integration tests share.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/mockllm"
)

// Fake is a fake agent CLI: a shell script that records how it was called,
// prints a recorded stream and exits with a given status.
type Fake struct {
	Bin string // the script
	dir string
}

// NewFake writes a fake CLI that prints the file fixture (may be "") to
// stdout, stderr (may be "") to stderr, and exits with exit.
func NewFake(t testing.TB, fixture, stderr string, exit int) *Fake {
	t.Helper()
	dir := t.TempDir()
	f := &Fake{Bin: filepath.Join(dir, "fake-agent"), dir: dir}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("printf '%s\\n' \"$@\" > '" + dir + "/argv'\n")
	b.WriteString("env > '" + dir + "/env'\n")
	b.WriteString("cat > '" + dir + "/stdin'\n")
	if fixture != "" {
		abs, err := filepath.Abs(fixture)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("cat '" + abs + "'\n")
	}
	if stderr != "" {
		if err := os.WriteFile(filepath.Join(dir, "stderr-text"), []byte(stderr), 0o600); err != nil {
			t.Fatal(err)
		}
		b.WriteString("cat '" + dir + "/stderr-text' >&2\n")
	}
	b.WriteString("exit " + itoa(exit) + "\n")
	if err := os.WriteFile(f.Bin, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// Argv returns the arguments the fake was called with (without argv[0]).
func (f *Fake) Argv(t testing.TB) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "argv"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// Env returns the fake's environment as a map.
func (f *Fake) Env(t testing.TB) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// Stdin returns what the fake read on stdin.
func (f *Fake) Stdin(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, "stdin"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Request returns a request for spec in fresh temporary directories: Dir
// is the worktree, Scratch lies outside it.
func Request(t testing.TB, spec *muster.ExecutorSpec, role muster.Role, auth muster.Authority, prompt string) *muster.ExecRequest {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "worktree")
	scratch := filepath.Join(root, "run", "scratch", "t1-1")
	for _, d := range []string{dir, scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &muster.ExecRequest{
		Run: "r1", Task: &muster.Task{ID: "t1", Title: "test"}, Role: role, Spec: spec,
		Clone: 1, Attempt: 1, Dir: dir, Prompt: prompt, Authority: auth, Scratch: scratch,
		Timeout: 3 * time.Minute, Grace: 2 * time.Second,
	}
}

// Recorder collects records; safe for use from the emitting goroutine
// while the test reads after Execute returns. With T set, an Emit that
// overlaps another (the executor emitting from two goroutines at once)
// fails the test.
type Recorder struct {
	T       testing.TB
	mu      sync.Mutex
	busy    atomic.Bool
	Records []muster.Record
}

// Emit is the emit function to pass to Execute.
func (r *Recorder) Emit(rec muster.Record) {
	if r.busy.CompareAndSwap(false, true) {
		defer r.busy.Store(false)
	} else if r.T != nil {
		r.T.Error("emit called concurrently")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Records = append(r.Records, rec)
}

// Of returns the records of one type.
func (r *Recorder) Of(typ string) []muster.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []muster.Record
	for _, rec := range r.Records {
		if rec.Type == typ {
			out = append(out, rec)
		}
	}
	return out
}

// Usage sums the usage records.
func (r *Recorder) Usage() muster.Usage {
	var u muster.Usage
	for _, rec := range r.Of(muster.RecUsage) {
		if rec.Source != muster.UsageClaim { // an agent's claim beside the provider's numbers
			u.Add(rec.Usage)
		}
	}
	return u
}

// Binary returns the installed CLI of a kind (on PATH or in .cache/agents).
// Outside CI a missing CLI skips the test; with CI=true it fails it.
func Binary(t testing.TB, kind muster.ExecKind) string {
	t.Helper()
	k := agentkit.Lookup(kind)
	bin, err := agentkit.FindBinary(nil, k.Binary)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s CLI missing in CI: %v", kind, err)
		}
		t.Skipf("%s CLI not installed (%v); run scripts/install-agents.sh", kind, err)
	}
	if _, err := exec.LookPath("node"); err != nil && kind != muster.ExecClaudeCode && kind != muster.ExecOpencode {
		t.Skipf("node not installed: %v", err)
	}
	return bin
}

// GitRepo returns a fresh git repository with one commit, as a worktree.
func GitRepo(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// Script is the mock model server's script for the integration tests. Each
// scenario is chosen by "[scenario: NAME]" in the prompt.
func Script() *mockllm.Script {
	write := func(tool string, input map[string]any) mockllm.Scenario {
		return mockllm.Scenario{Steps: []mockllm.Step{
			{Text: "Writing the file.", Tools: []mockllm.ToolCall{{Name: tool, Input: input}},
				Usage: &mockllm.Usage{InputTokens: 1000, OutputTokens: 50}},
			{Text: "Wrote hello.txt.", Usage: &mockllm.Usage{InputTokens: 1200, OutputTokens: 20}},
		}}
	}
	sc := []mockllm.Scenario{
		write("Write", map[string]any{"file_path": "{{cwd}}/hello.txt", "content": "hello\n"}),
		{Steps: []mockllm.Step{
			{Tools: []mockllm.ToolCall{{Name: "apply_patch", Custom: "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"}},
				Usage: &mockllm.Usage{InputTokens: 1000, OutputTokens: 50}},
			{Text: "Wrote hello.txt.", Usage: &mockllm.Usage{InputTokens: 1200, OutputTokens: 20}},
		}},
		write("write_file", map[string]any{"file_path": "{{cwd}}/hello.txt", "content": "hello\n"}),
		write("write", map[string]any{"filePath": "{{cwd}}/hello.txt", "content": "hello\n"}),
		{Steps: []mockllm.Step{{Text: "Looks fine.\n```muster-findings\n{\"findings\": [{\"severity\": \"major\", \"title\": \"missing test\", \"path\": \"hello.txt\", \"line\": 1}]}\n```",
			Usage: &mockllm.Usage{InputTokens: 500, OutputTokens: 40}}}},
		{Steps: []mockllm.Step{{Status: 401, Error: "invalid x-api-key", ErrorType: "authentication_error"}}},
		{Steps: []mockllm.Step{{Status: 429, Error: "Rate limit exceeded, retry after 7 seconds", RetryAfter: "7"}}},
		{Steps: []mockllm.Step{{Text: "late", DelayMS: 20000}}},
		{Steps: []mockllm.Step{{Tools: []mockllm.ToolCall{{Name: "Bash", Input: map[string]any{"command": "printf 'hello\\n' > hello.txt", "description": "write"}}}}, {Text: "Done."}}},
		{Steps: []mockllm.Step{{Tools: []mockllm.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": "printf 'hello\\n' > hello.txt"}}}}, {Text: "Done."}}},
		{Steps: []mockllm.Step{{Tools: []mockllm.ToolCall{{Name: "bash", Input: map[string]any{"command": "printf 'hello\\n' > hello.txt", "description": "write"}}}}, {Text: "Done."}}},
		{Steps: []mockllm.Step{{Tools: []mockllm.ToolCall{{Name: "run_shell_command", Input: map[string]any{"command": "printf 'hello\\n' > hello.txt"}}}}, {Text: "Done."}}},
		write("create", map[string]any{"path": "{{cwd}}/hello.txt", "file_text": "hello\n"}),
		write("write_file", map[string]any{"path": "hello.txt", "content": "hello\n"}),
		write("write", map[string]any{"path": "hello.txt", "content": "hello\n"}),
		{Steps: []mockllm.Step{{Tools: []mockllm.ToolCall{{Name: "Bash", Input: map[string]any{"command": leak, "description": "leak"}}}}, {Text: "Done."}}},
		{Steps: []mockllm.Step{{Tools: []mockllm.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": leak}}}}, {Text: "Done."}}},
		{Steps: []mockllm.Step{{Tools: []mockllm.ToolCall{{Name: "Bash", Input: map[string]any{"command": netProbe, "description": "net", "timeout": 120000}}}}, {Text: "Done."}}},
		{Steps: []mockllm.Step{{Tools: []mockllm.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": netProbe}}}}, {Text: "Done."}}},
	}
	names := []string{"claude-write", "codex-write", "gemini-write", "opencode-write", "review", "auth", "ratelimit", "slow",
		"claude-shell", "codex-shell", "opencode-shell", "gemini-shell", "copilot-write", "http-write", "pi-write",
		"claude-leak", "codex-leak", "claude-net", "codex-net"}
	for i := range sc {
		sc[i].Name = names[i]
	}
	return &mockllm.Script{Scenarios: sc}
}

// leak is the attack of issue 22 as a shell tool call: the agent writes
// its key variables and its whole environment into its worktree, where
// they would be committed with its change.
const leak = `printf '%s|%s|%s' "$ANTHROPIC_API_KEY" "$OPENAI_API_KEY" "$MUSTER_IT_CODEX_KEY" > key.txt; env > env.txt`

// Ports of netProbe: HostProbePort is a service of the host's loopback
// the test starts (the agent must not reach it), OwnProbePort the
// agent's own server in its network namespace (it must).
const (
	HostProbePort = 47821
	OwnProbePort  = 47822
)

// netProbe is issue 22's network attack as a shell tool call: reach a
// service on the host's loopback through muster's proxy (host.code; past
// NO_PROXY, which sends loopback direct) and
// directly (direct.code), and start a server of its own on its loopback
// and reach it (own.code).
var netProbe = fmt.Sprintf(`curl -s --noproxy '' --max-time 20 -o /dev/null -w '%%{http_code}' http://127.0.0.1:%[1]d/ > host.code; `+
	`curl -s --noproxy '*' --max-time 5 -o /dev/null -w '%%{http_code}' http://127.0.0.1:%[1]d/ > direct.code; `+
	`python3 -m http.server --bind 127.0.0.1 %[2]d >/dev/null 2>&1 & srv=$!; `+
	`for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do curl -s --noproxy '*' -o /dev/null http://127.0.0.1:%[2]d/ && break; sleep 0.5; done; `+
	`curl -s --noproxy '*' --max-time 5 -o /dev/null -w '%%{http_code}' http://127.0.0.1:%[2]d/ > own.code; kill $srv`, HostProbePort, OwnProbePort)

// NoSecret fails the test when secret appears in any record, in the
// result's tail, or in any file under dirs.
func NoSecret(t testing.TB, secret string, rec *Recorder, res *muster.ExecResult, dirs ...string) {
	t.Helper()
	for _, r := range rec.Records {
		if strings.Contains(r.Text+r.Args+r.SessionID+r.Tool, secret) {
			t.Errorf("secret in record %+v", r)
		}
	}
	if res != nil && strings.Contains(res.Tail, secret) {
		t.Error("secret in tail")
	}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() || !de.Type().IsRegular() {
				return nil
			}
			if fi, err := de.Info(); err != nil || fi.Size() > 8<<20 {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil && strings.Contains(string(b), secret) {
				t.Errorf("secret in file %s", p)
			}
			return nil
		})
	}
}

// ReadFile returns the file's content, or "" when it cannot be read.
func ReadFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// Execute runs the executor newExec builds for req.Spec against a fake CLI
// that prints the file fixture and exits with exit; req.Spec.Command is
// set to the fake.
func Execute[E muster.Executor](t testing.TB, newExec func(*muster.ExecutorSpec) (E, error), req *muster.ExecRequest, fixture string, exit int) (*muster.ExecResult, error, *Recorder, *Fake) {
	t.Helper()
	fake := NewFake(t, fixture, "", exit)
	req.Spec.Command = []string{fake.Bin}
	e, err := newExec(req.Spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{}
	res, err := e.Execute(context.Background(), req, rec.Emit)
	return res, err, rec, fake
}

// BenchParse measures parse over the lines of the recorded stream fixture.
func BenchParse(b *testing.B, fixture string, parse func([]byte, *agentkit.Stream) error) {
	data, err := os.ReadFile(fixture)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s := agentkit.NewStream(nil)
		for _, l := range lines {
			if err := parse(l, s); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// WantClass fails the test unless err is a *muster.AgentError of class,
// and returns it.
func WantClass(t testing.TB, err error, class muster.FailureClass) *muster.AgentError {
	t.Helper()
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != class {
		t.Fatalf("err %v, want %s", err, class)
	}
	return ae
}

// Fails runs the executor newExec builds for spec, as a coder with write
// authority, against a fake CLI that prints the file fixture and exits
// with status 1, and wants the failure class (see WantClass).
func Fails[E muster.Executor](t testing.TB, newExec func(*muster.ExecutorSpec) (E, error), spec *muster.ExecutorSpec, fixture string, class muster.FailureClass) *muster.AgentError {
	t.Helper()
	req := Request(t, spec, muster.RoleCoder, muster.AuthorityWrite, "x")
	_, err, _, _ := Execute(t, newExec, req, fixture, 1)
	return WantClass(t, err, class)
}

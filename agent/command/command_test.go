package command_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	muster "github.com/muster-run/muster"
	"github.com/muster-run/muster/agent/agenttest"
	"github.com/muster-run/muster/agent/command"
)

var fakeagent string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeagent-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fakeagent = filepath.Join(dir, "fakeagent")
	build := exec.Command("go", "build", "-o", fakeagent, "github.com/muster-run/muster/internal/cmd/fakeagent")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build fakeagent:", err)
		os.Exit(3)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// argv turns a conformance behaviour into fakeagent flags.
func argv(b agenttest.Behavior) []string {
	a := []string{fakeagent}
	for _, s := range b.Say {
		a = append(a, "--say", s)
	}
	if b.EchoPrompt {
		a = append(a, "--echo-prompt")
	}
	if b.Usage != nil {
		u := fmt.Sprintf("in=%d,out=%d,cache_read=%d,cache_write=%d", b.Usage.InputTokens, b.Usage.OutputTokens,
			b.Usage.CacheReadTokens, b.Usage.CacheWriteTokens)
		if b.Model != "" {
			u += ",model=" + b.Model
		}
		if b.Usage.CostMicros != 0 {
			u += fmt.Sprintf(",cost=%f", float64(b.Usage.CostMicros)/1e6)
		}
		a = append(a, "--usage", u)
	}
	if b.Tool != "" {
		a = append(a, "--tool", b.Tool+"="+b.ToolArgs)
	}
	for _, f := range b.Findings {
		a = append(a, "--finding", f.Severity+":"+f.Title+":"+f.Path)
	}
	if b.Findings != nil && len(b.Findings) == 0 {
		a = append(a, "--review")
	}
	if b.Satisfied {
		a = append(a, "--satisfied")
	}
	if b.Sleep > 0 {
		a = append(a, "--sleep", b.Sleep.String())
	}
	if b.IgnoreTerm {
		a = append(a, "--ignore-term")
	}
	if b.EnvFile != "" {
		a = append(a, "--env-file", b.EnvFile)
	}
	if b.ChildPID != "" {
		a = append(a, "--child-pidfile", b.ChildPID)
	}
	return append(a, "--exit", fmt.Sprint(b.Exit))
}

func newExec(t *testing.T, b agenttest.Behavior) (muster.Executor, *muster.ExecutorSpec) {
	spec := &muster.ExecutorSpec{Name: "local", Kind: "command", Command: argv(b)}
	ex, err := command.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	return ex, spec
}

func TestConformance(t *testing.T) {
	agenttest.RunExecutorConformance(t, newExec)
}

func TestMissingBinaryFailsToStart(t *testing.T) {
	t.Parallel()
	spec := &muster.ExecutorSpec{Name: "ghost", Kind: "command", Command: []string{"no-such-agent-binary-xyz"}}
	ex, err := command.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ex.Execute(context.Background(), agenttest.NewRequest(t, spec), nil)
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Class != muster.FailStart || !strings.Contains(ae.Message, "no-such-agent-binary-xyz") {
		t.Fatalf("err = %v, want a start failure naming the binary", err)
	}
}

func TestNewNeedsCommand(t *testing.T) {
	t.Parallel()
	if _, err := command.New(&muster.ExecutorSpec{Name: "x"}); err == nil {
		t.Fatal("empty command accepted")
	}
}

func TestArgsAppendedAndFilesWritten(t *testing.T) {
	t.Parallel()
	spec := &muster.ExecutorSpec{Name: "local", Command: []string{fakeagent, "--write", "out/a.txt=one\\n"},
		Args: []string{"--append", "out/a.txt=two\\n"}}
	ex, err := command.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := agenttest.NewRequest(t, spec)
	req.PlanOut = filepath.Join(req.Scratch, "plan.md")
	if _, err := ex.Execute(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(req.Dir, "out/a.txt"))
	if err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("file %q, %v", b, err)
	}
	env := command.Environ(spec, req, "/p")
	if !contains(env, "MUSTER_PLAN_OUT="+req.PlanOut) || !contains(env, "MUSTER_PROMPT_FILE=/p") {
		t.Fatalf("env lacks MUSTER_PLAN_OUT or MUSTER_PROMPT_FILE")
	}
}

func TestFailRound(t *testing.T) {
	t.Parallel()
	spec := &muster.ExecutorSpec{Name: "local", Command: []string{fakeagent, "--fail-round", "1"}}
	ex, _ := command.New(spec)
	req := agenttest.NewRequest(t, spec)
	if _, err := ex.Execute(context.Background(), req, nil); err != nil {
		t.Fatalf("round 0: %v", err)
	}
	req.Round = 1
	if _, err := ex.Execute(context.Background(), req, nil); err == nil {
		t.Fatal("round 1 should fail")
	}
}

func TestParseRecord(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line string
		ok   bool
		want muster.Record
	}{
		{`{"type":"usage","model":"m","input_tokens":3,"cost_usd":0.5}`, true, muster.Record{Type: "usage", Model: "m", Usage: muster.Usage{InputTokens: 3, CostMicros: 500000}}},
		{`{"type":"usage","output_tokens":2}`, true, muster.Record{Type: "usage", Usage: muster.Usage{OutputTokens: 2}}},
		{`{"type":"tool","name":"Bash","args":{"cmd":"ls"}}`, true, muster.Record{Type: "tool", Tool: "Bash", Args: `{"cmd":"ls"}`}},
		{`{"type":"notes","text":"n"}`, true, muster.Record{Type: "notes", Text: "n"}},
		{`{"type":"satisfied"}`, true, muster.Record{Type: "satisfied"}},
		{`{"type":"verdict","winner":" codex#1 ","reason":"smaller"}`, true, muster.Record{Type: "verdict", Winner: "codex#1", Text: "smaller"}},
		{`{"type":"findings","findings":[{"severity":"Major","title":"t"},{"severity":" CRITICAL "}]}`, true,
			muster.Record{Type: "findings", Findings: []muster.Finding{{Severity: "major", Title: "t"}, {Severity: "critical"}}}},
		{`{"type":1}`, false, muster.Record{}},
		{`{"type":"other"}`, false, muster.Record{}},
		{`[1]`, false, muster.Record{}},
		{`plain text`, false, muster.Record{}},
		{`{"type":"usage",`, false, muster.Record{}},
		// Numbers that are not counts are refused by name, the record kept.
		{`{"type":"usage","input_tokens":1e30,"output_tokens":-3,"cost_usd":1e309}`, true,
			muster.Record{Type: "usage", Usage: muster.Usage{InputTokens: math.MaxInt64, OutputTokens: -3, CostMicros: math.MaxInt64}}},
		{`{"type":"usage","input_tokens":"12","cache_read_tokens":1.5,"cost_usd":"nan"}`, true,
			muster.Record{Type: "usage", Usage: muster.Usage{CacheReadTokens: 1},
				Problem: `input_tokens "12" is not a number (counted as 0); cache_read_tokens 1.5 is not a whole number (counted as 1); cost_usd "nan" is not a number (counted as 0)`}},
	}
	for _, c := range cases {
		got, ok := command.ParseRecord(c.line)
		if ok != c.ok || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("ParseRecord(%s) = %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add(`{"type":"usage","input_tokens":1}`)
	f.Add(`{"type":"findings","findings":[{"severity":"major"}]}`)
	f.Fuzz(func(t *testing.T, line string) { command.ParseRecord(line) })
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestRelativeCommandRunsFromWorktree(t *testing.T) {
	t.Parallel()
	spec := &muster.ExecutorSpec{Name: "script", Command: []string{"./scripts/agent.sh"}}
	ex, err := command.New(spec)
	if err != nil {
		t.Fatal(err)
	}
	req := agenttest.NewRequest(t, spec)
	script := "#!/bin/sh\nread -r first\necho \"{\\\"type\\\":\\\"tool\\\",\\\"name\\\":\\\"Read\\\",\\\"args\\\":\\\"$first\\\"}\"\n"
	if err := os.MkdirAll(filepath.Join(req.Dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(req.Dir, "scripts", "agent.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var got []muster.Record
	pids := 0
	if _, err := ex.Execute(context.Background(), req, func(r muster.Record) {
		if r.Type == muster.RecPID {
			pids++ // the agent's pid, first, for resume to kill survivors
			return
		}
		got = append(got, r)
	}); err != nil {
		t.Fatal(err)
	}
	if pids != 1 || len(got) != 1 || got[0].Tool != "Read" || got[0].Args != "Do the task." {
		t.Fatalf("records %+v", got)
	}
}

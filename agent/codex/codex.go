// Package codex drives the Codex CLI (executor kind "codex") with
// `codex exec --json`: one process per invocation, the prompt on stdin, a
// private CODEX_HOME per clone whose config.toml holds a custom model
// provider (Responses wire API) when base_url is set, usage from
// turn.completed, and `exec resume` for fix rounds.
package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
)

// Executor runs Codex for one executor spec.
type Executor struct {
	spec *muster.ExecutorSpec
	kind *agentkit.Kind
	bin  string
}

// New returns an executor for spec (kind "codex"). The binary is
// spec.Command[0] when set, else "codex" on PATH or in the repository's
// .cache/agents; a missing binary is reported when Execute runs.
func New(spec *muster.ExecutorSpec) (*Executor, error) {
	if spec == nil {
		return nil, fmt.Errorf("codex: no executor spec")
	}
	if spec.Kind != "" && spec.Kind != muster.ExecCodex {
		return nil, fmt.Errorf("executor %s: kind %q is not %s", spec.Name, spec.Kind, muster.ExecCodex)
	}
	e := &Executor{spec: spec, kind: agentkit.Lookup(muster.ExecCodex)}
	e.bin, _ = agentkit.FindBinary(spec, e.kind.Binary)
	return e, nil
}

// providerID names the custom model provider muster writes.
const providerID = "muster"

// Execute runs one invocation of Codex in req.Dir.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	fail := func(err error) (*muster.ExecResult, error) {
		return nil, &muster.AgentError{Class: muster.FailStart, ExitCode: -1, Message: err.Error()}
	}
	bin := e.bin
	if bin == "" {
		var err error
		if bin, err = agentkit.FindBinary(e.spec, e.kind.Binary, req.Dir); err != nil {
			return fail(err)
		}
	}
	home, err := agentkit.Home(req)
	if err != nil {
		return fail(err)
	}
	codexHome := filepath.Join(home, ".codex")
	keyName, key := agentkit.APIKey(e.spec, e.kind)
	if key == "" {
		if err := agentkit.SeedLogin(e.kind, home); err != nil {
			return fail(err)
		}
	}
	if err := agentkit.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(configTOML(e.spec, keyName))); err != nil {
		return fail(fmt.Errorf("codex config: %w", err))
	}
	resume := resumable(codexHome, req.SessionID)
	u := &usageState{dir: filepath.Join(codexHome, "muster-usage"), model: e.spec.Model}
	inv := agentkit.Invocation{
		Kind:    e.kind,
		Argv:    append([]string{bin}, buildArgs(e.spec, req, resume)...),
		Env:     agentkit.Environ(home, kindEnv(e.spec, codexHome, keyName, key), req),
		Dir:     req.Dir,
		Stdin:   agentkit.Prompt(req),
		Secrets: agentkit.Secrets(req, key),
		Parse:   func(line []byte, s *agentkit.Stream) error { return parseLine(line, s, u) },
	}
	res, _, err := agentkit.Run(ctx, req, inv, emit)
	if resume && agentkit.ResumeFailed(res, err) {
		inv.Argv = append([]string{bin}, buildArgs(e.spec, req, false)...)
		res, _, err = agentkit.Run(ctx, req, inv, emit)
	}
	// Codex snapshots the shell's environment, the API key included when
	// it cannot mask it, into its home: never leave that behind.
	_ = os.RemoveAll(filepath.Join(codexHome, "shell_snapshots"))
	return res, err
}

// buildArgs returns the arguments after the program name; the prompt is
// read from stdin ("-"). No secret is ever an argument.
func buildArgs(spec *muster.ExecutorSpec, req *muster.ExecRequest, resume bool) []string {
	args := []string{"exec", "--json", "--skip-git-repo-check"}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	switch req.Authority {
	case muster.AuthorityRead:
		args = append(args, "--sandbox", "read-only")
	case muster.AuthorityShell:
		args = append(args, "--dangerously-bypass-approvals-and-sandbox")
	default:
		args = append(args, "--sandbox", "workspace-write")
	}
	args = append(args, spec.Args...)
	if resume {
		args = append(args, "resume", req.SessionID)
	}
	return append(args, "-")
}

// configTOML is the clone's config.toml: with a base URL, a custom
// provider speaking the Responses API whose key is read from keyName.
func configTOML(spec *muster.ExecutorSpec, keyName string) string {
	var b strings.Builder
	b.WriteString("# Written by muster for this executor clone; rewritten on each run.\n")
	if spec.BaseURL == "" {
		return b.String()
	}
	fmt.Fprintf(&b, "model_provider = %s\n\n", tomlString(providerID))
	fmt.Fprintf(&b, "[model_providers.%s]\n", providerID)
	fmt.Fprintf(&b, "name = %s\n", tomlString("muster: "+spec.Name))
	fmt.Fprintf(&b, "base_url = %s\n", tomlString(spec.BaseURL))
	fmt.Fprintf(&b, "env_key = %s\n", tomlString(keyName))
	b.WriteString("wire_api = \"responses\"\n")
	b.WriteString("request_max_retries = 1\nstream_max_retries = 1\n")
	return b.String()
}

// tomlString quotes s as a TOML basic string (JSON's escapes are valid).
func tomlString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// kindEnv returns the variables Codex needs: its home and the key, under
// the name the custom provider reads, or the built-in provider's names.
func kindEnv(spec *muster.ExecutorSpec, codexHome, keyName, key string) map[string]string {
	env := map[string]string{"CODEX_HOME": codexHome}
	if key == "" {
		return env
	}
	if spec.BaseURL != "" {
		env[keyName] = key
	} else {
		env["OPENAI_API_KEY"] = key
		env["CODEX_API_KEY"] = key
	}
	return env
}

// resumable reports whether the thread's rollout is in this CODEX_HOME.
func resumable(codexHome, id string) bool {
	if id == "" || strings.ContainsAny(id, `/\*?[`) {
		return false
	}
	m, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	return len(m) > 0
}

type event struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     *item  `json:"item"`
	Usage    *usage `json:"usage"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type item struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Command string `json:"command"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Query  string          `json:"query"`
	Args   json.RawMessage `json:"arguments"`
}

type usage struct {
	InputTokens      int64 `json:"input_tokens"`
	CachedInput      int64 `json:"cached_input_tokens"`
	CacheWriteInput  int64 `json:"cache_write_input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	ReasoningOutputs int64 `json:"reasoning_output_tokens"`
}

// parseLine handles one --json line; unknown types are skipped.
func parseLine(line []byte, s *agentkit.Stream, u *usageState) error {
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil {
		return err
	}
	switch ev.Type {
	case "thread.started":
		s.Session(ev.ThreadID)
	case "item.completed":
		if ev.Item != nil {
			parseItem(ev.Item, s)
		}
	case "turn.completed":
		s.Done = true
		if ev.Usage != nil {
			s.UsageRecord(u.model, u.delta(s.SessionID, *ev.Usage))
		}
	case "turn.failed":
		s.Done = true
		s.Failed = true
		if ev.Error != nil {
			s.Error(ev.Error.Message)
		}
	case "error":
		s.Error(ev.Message)
	}
	return nil
}

func parseItem(it *item, s *agentkit.Stream) {
	switch it.Type {
	case "agent_message":
		s.Message(it.Text)
		s.SetFinal(it.Text)
	case "command_execution":
		s.Tool("shell", map[string]any{"command": strings.TrimPrefix(it.Command, "/bin/bash -lc ")})
	case "file_change":
		var paths []any
		for _, c := range it.Changes {
			paths = append(paths, c.Kind+" "+c.Path)
		}
		s.Tool("apply_patch", map[string]any{"path": paths})
	case "mcp_tool_call":
		s.Tool(it.Server+"."+it.Tool, it.Args)
	case "web_search":
		s.Tool("web_search", map[string]any{"query": it.Query})
	case "collab_tool_call":
		s.Tool(it.Tool, nil)
	case "error":
		s.Note("warning: " + it.Message)
	}
}

// usageState turns Codex's usage, which after `exec resume` is the
// thread's running total, into this run's share: the last total of each
// thread is kept in a file of the clone's home.
type usageState struct {
	dir   string
	model string
}

func (u *usageState) delta(thread string, cur usage) muster.Usage {
	var prev usage
	path := ""
	if thread != "" && !strings.ContainsAny(thread, `/\`) {
		path = filepath.Join(u.dir, thread+".json")
		if b, err := os.ReadFile(path); err == nil {
			_ = json.Unmarshal(b, &prev)
		}
		if b, err := json.Marshal(cur); err == nil {
			_ = agentkit.WriteFile(path, b)
		}
	}
	if cur.InputTokens < prev.InputTokens || cur.OutputTokens < prev.OutputTokens {
		prev = usage{} // not a running total after all
	}
	in := cur.InputTokens - prev.InputTokens
	cached := cur.CachedInput - prev.CachedInput
	if cached < 0 {
		cached = 0
	}
	// input_tokens includes the cached part.
	if cached > in {
		cached = in
	}
	return muster.Usage{
		InputTokens:      in - cached,
		CacheReadTokens:  cached,
		CacheWriteTokens: max(cur.CacheWriteInput-prev.CacheWriteInput, 0),
		OutputTokens:     cur.OutputTokens - prev.OutputTokens,
	}
}

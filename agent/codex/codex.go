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
	"path/filepath"
	"strings"
	"sync"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/exchange"
)

// Executor runs Codex for one executor spec.
type Executor struct {
	base *agentkit.Base
	// last is each thread's last total this process saw (usageState).
	last *lastTotals
}

// New returns an executor for spec (kind "codex"). The binary is
// spec.Command[0] when set, else "codex" on PATH or in the repository's
// .cache/agents; a missing binary is reported when Execute runs.
func New(spec *muster.ExecutorSpec) (*Executor, error) {
	b, err := agentkit.NewBase(spec, muster.ExecCodex)
	if err != nil {
		return nil, err
	}
	return &Executor{base: b, last: &lastTotals{m: map[string]usage{}}}, nil
}

// providerID names the custom model provider muster writes.
const providerID = "muster"

// Execute runs one invocation of Codex in req.Dir.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	s, err := e.base.Prepare(req)
	if err != nil {
		return nil, err
	}
	spec := e.base.SpecFor(req)
	codexHome := filepath.Join(s.Home, ".codex")
	if err := agentkit.WriteFile(s.Home, ".codex/config.toml", []byte(configTOML(spec, s.KeyName))); err != nil {
		return nil, agentkit.StartFailure(fmt.Errorf("codex config: %w", err))
	}
	resume := resumable(codexHome, req.SessionID)
	u := newUsageState(s.Home, spec.Model, e.last)
	parse := func(line []byte, st *agentkit.Stream) error { return parseLine(line, st, u) }
	inv := s.Invocation(req, buildArgs(spec, req, resume), kindEnv(spec, codexHome, s.KeyName, s.Key), parse)
	res, err := agentkit.RunResuming(ctx, req, inv, emit, resume, func(inv *agentkit.Invocation) {
		inv.Argv = s.Argv(buildArgs(spec, req, false))
	})
	// Codex snapshots the shell's environment, the API key included when
	// it cannot mask it, into its home: never leave that behind.
	dropShellSnapshots(s.Home)
	return res, err
}

// dropShellSnapshots removes home/.codex/shell_snapshots through a root
// opened on home: when the agent made .codex a link out of the home,
// nothing where it leads is removed.
func dropShellSnapshots(home string) {
	_ = exchange.RemoveAll(home, filepath.Join(".codex", "shell_snapshots"))
}

// buildArgs returns the arguments after the program name; the prompt is
// read from stdin ("-"). No secret is ever an argument.
func buildArgs(spec *muster.ExecutorSpec, req *muster.ExecRequest, resume bool) []string {
	args := []string{"exec", "--json", "--skip-git-repo-check"}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	switch {
	case req.Confine != nil:
		// Codex's own sandbox needs bubblewrap, which mounts; no process
		// under muster's Landlock may mount, so Codex's sandbox is off and
		// muster's kernel confinement takes its place (a read-authority
		// invocation may not write its clone at all).
		args = append(args, "--dangerously-bypass-approvals-and-sandbox")
	case req.Authority == muster.AuthorityRead:
		args = append(args, "--sandbox", "read-only")
	case req.Authority == muster.AuthorityShell:
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

// configTOML is the clone's config.toml (agentkit.CodexConfig).
func configTOML(spec *muster.ExecutorSpec, keyName string) string {
	return agentkit.CodexConfig(spec, keyName, providerID)
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
// thread is kept in memory (lastTotals) and, for a later muster process
// (a resumed run), in a file of the clone's home (.codex/muster-usage).
// The file is the agent's to write too: it is read only when this
// process has not seen the thread, or an agent that wrote its current
// total there would have its turn counted as nothing.
type usageState struct {
	home  string // the root every read and write goes through
	model string
	last  *lastTotals // nil: the file alone
}

// lastTotals is each thread's last total (by home and thread) that this
// process saw.
type lastTotals struct {
	mu sync.Mutex
	m  map[string]usage
}

// swap records cur as key's last total and returns the one before it.
func (l *lastTotals) swap(key string, cur usage) (usage, bool) {
	if l == nil {
		return usage{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	prev, ok := l.m[key]
	l.m[key] = cur
	return prev, ok
}

// newUsageState keeps the totals under home/.codex, read and written
// through a root opened on home itself: the agent may have made .codex a
// link out of the home, and muster must not follow it.
func newUsageState(home, model string, last *lastTotals) *usageState {
	return &usageState{home: home, model: model, last: last}
}

func (u *usageState) delta(thread string, cur usage) muster.Usage {
	var prev usage
	if thread != "" && !strings.ContainsAny(thread, `/\`) {
		// The home is the agent's too: read and written through exchange.
		rel := filepath.Join(".codex", "muster-usage", thread+".json")
		seen := false
		if prev, seen = u.last.swap(u.home+"\x00"+thread, cur); !seen {
			if b, err := exchange.ReadFile(u.home, rel, 1<<16); err == nil {
				_ = json.Unmarshal(b, &prev)
			}
		}
		if b, err := json.Marshal(cur); err == nil {
			_ = agentkit.WriteFile(u.home, rel, b)
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

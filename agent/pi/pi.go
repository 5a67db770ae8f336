// Package pi drives pi, Mario Zechner's coding agent
// (@mariozechner/pi-coding-agent; executor kind "pi"), in print mode with
// its JSON event stream: one process per invocation, the prompt on stdin,
// a private agent directory per clone (settings, models.json, sessions),
// its built-in tools narrowed to the task's authority, usage and cost per
// assistant message, and --session for fix rounds.
package pi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/exchange"
)

// Executor runs pi for one executor spec.
type Executor struct{ base *agentkit.Base }

// New returns an executor for spec (kind "pi"). The binary is
// spec.Command[0] when set, else "pi" on PATH or in the repository's
// .cache/agents; a missing binary is reported when Execute runs.
func New(spec *muster.ExecutorSpec) (*Executor, error) {
	b, err := agentkit.NewBase(spec, muster.ExecPi)
	if err != nil {
		return nil, err
	}
	return &Executor{base: b}, nil
}

// providerID names the provider muster writes into models.json for a
// base_url.
const providerID = "muster"

// Tool sets of each authority: pi's built-in tools.
const (
	readTools  = "read,grep,find,ls"
	writeTools = readTools + ",edit,write"
	shellTools = writeTools + ",bash"
)

// Execute runs one invocation of pi in req.Dir.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	s, err := e.base.Prepare(req)
	if err != nil {
		return nil, err
	}
	spec := e.base.SpecFor(req)
	agentDir := filepath.Join(s.Home, ".pi", "agent")
	if err := writeConfig(s.Home, spec, s.KeyName); err != nil {
		return nil, agentkit.StartFailure(fmt.Errorf("pi config: %w", err))
	}
	sessions := filepath.Join(s.Home, ".pi", "sessions")
	resume := resumable(sessions, req.SessionID)
	inv := s.Invocation(req, buildArgs(spec, req, sessions, resume), kindEnv(agentDir, s.KeyName, s.Key), parseLine)
	return agentkit.RunResuming(ctx, req, inv, emit, resume, func(inv *agentkit.Invocation) {
		inv.Argv = s.Argv(buildArgs(spec, req, sessions, false))
	})
}

// buildArgs returns the arguments after the program name; the prompt is
// on stdin. No secret is ever an argument.
func buildArgs(spec *muster.ExecutorSpec, req *muster.ExecRequest, sessions string, resume bool) []string {
	args := []string{"--mode", "json", "-p", "--offline", "--no-extensions", "--no-skills", "--no-prompt-templates",
		"--session-dir", sessions}
	switch {
	case spec.BaseURL != "":
		args = append(args, "--provider", providerID)
		if spec.Model != "" {
			args = append(args, "--model", spec.Model)
		}
	case spec.Model != "":
		args = append(args, "--model", spec.Model) // "provider/id" or a pattern
	}
	tools := writeTools
	switch req.Authority {
	case muster.AuthorityRead:
		tools = readTools
	case muster.AuthorityShell:
		tools = shellTools
	}
	args = append(args, "--tools", tools)
	if resume {
		args = append(args, "--session", req.SessionID)
	}
	return append(args, spec.Args...)
}

// writeConfig writes the clone's agent directory: settings.json (no
// retries of its own, no telemetry, quiet) and, with a base URL, a
// models.json declaring the endpoint as an OpenAI-compatible provider
// whose key pi reads from the variable keyName (never the key itself).
func writeConfig(home string, spec *muster.ExecutorSpec, keyName string) error {
	dir := filepath.Join(".pi", "agent")
	settings := map[string]any{
		"retry":                  map[string]any{"enabled": false, "provider": map[string]any{"maxRetries": 0}},
		"enableInstallTelemetry": false,
		"quietStartup":           true,
	}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := agentkit.WriteFile(home, filepath.Join(dir, "settings.json"), b); err != nil {
		return err
	}
	if spec.BaseURL == "" {
		_ = exchange.Remove(home, filepath.Join(dir, "models.json"))
		return nil
	}
	model := spec.Model
	if model == "" {
		model = "default"
	}
	models := map[string]any{"providers": map[string]any{providerID: map[string]any{
		"baseUrl": spec.BaseURL, "api": "openai-completions", "apiKey": keyName,
		"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
		"models": []any{map[string]any{"id": model}},
	}}}
	b, _ = json.MarshalIndent(models, "", "  ")
	return agentkit.WriteFile(home, filepath.Join(dir, "models.json"), b)
}

// kindEnv returns pi's variables: its agent directory, offline and
// telemetry off, and the key under the name models.json names (or, for
// pi's built-in providers, the name the executor's api_key_env gives).
func kindEnv(agentDir, keyName, key string) map[string]string {
	env := map[string]string{"PI_CODING_AGENT_DIR": agentDir, "PI_OFFLINE": "1", "PI_TELEMETRY": "0", "PI_SKIP_VERSION_CHECK": "1"}
	if key != "" {
		env[keyName] = key
	}
	return env
}

// resumable reports whether the session's file is in the clone's session
// directory.
func resumable(dir, id string) bool {
	if id == "" || strings.ContainsAny(id, `/\*?[`) {
		return false
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*_"+id+".jsonl"))
	return len(m) > 0
}

// event is the part of pi's JSON events muster reads.
type event struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Message  *message        `json:"message"`
	ToolName string          `json:"toolName"`
	Args     json.RawMessage `json:"args"`
	IsError  bool            `json:"isError"`
	// auto_retry_* (off in muster's settings, but read when on).
	ErrorMessage string `json:"errorMessage"`
}

type message struct {
	Role         string    `json:"role"`
	Content      []content `json:"content"`
	Model        string    `json:"model"`
	Usage        *usage    `json:"usage"`
	StopReason   string    `json:"stopReason"`
	ErrorMessage string    `json:"errorMessage"`
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Cost       *struct {
		Total float64 `json:"total"`
	} `json:"cost"`
}

// maxTokens bounds one record's count (a billion tokens).
const maxTokens = 1 << 30

func clamp(n int64) int64 { return max(0, min(n, maxTokens)) }

// parseLine reads one JSON event of pi's stream.
func parseLine(line []byte, s *agentkit.Stream) error {
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil {
		return err
	}
	switch ev.Type {
	case "session":
		s.Session(ev.ID)
	case "tool_execution_start":
		s.Tool(agentkit.Clip(ev.ToolName, 60), ev.Args)
	case "tool_execution_end":
		if ev.IsError {
			s.Note("tool " + agentkit.Clip(ev.ToolName, 60) + " failed")
		}
	case "message_end":
		m := ev.Message
		if m == nil || m.Role != "assistant" {
			return nil
		}
		var text strings.Builder
		for _, c := range m.Content {
			if c.Type == "text" {
				text.WriteString(c.Text)
			}
		}
		if text.Len() > 0 {
			s.Message(text.String())
			s.SetFinal(text.String())
		}
		if m.Model != "" {
			s.Model = agentkit.Clip(m.Model, 100)
		}
		if u := m.Usage; u != nil {
			mu := muster.Usage{InputTokens: clamp(u.Input), OutputTokens: clamp(u.Output),
				CacheReadTokens: clamp(u.CacheRead), CacheWriteTokens: clamp(u.CacheWrite)}
			if u.Cost != nil && u.Cost.Total > 0 && u.Cost.Total < 1000 {
				mu.CostMicros = int64(math.Round(u.Cost.Total * 1e6))
			}
			s.UsageRecord(s.Model, mu)
		}
		if m.StopReason == "error" || m.StopReason == "aborted" {
			s.Failed = true
			s.Error(m.ErrorMessage)
		} else {
			// A later message that succeeds (after a retry) clears it.
			s.Failed, s.Errors = false, nil
		}
	case "auto_retry_start":
		s.Note("pi retries: " + agentkit.Clip(ev.ErrorMessage, 300))
	case "agent_end":
		s.Done = true
	}
	return nil
}

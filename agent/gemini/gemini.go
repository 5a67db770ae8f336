// Package gemini drives the Gemini CLI (executor kind "gemini") in
// headless mode with stream-json output: one process per invocation, the
// prompt on stdin, a private HOME per clone holding its settings.json,
// usage from the final result's stats, and --resume for fix rounds.
package gemini

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/exchange"
)

// Executor runs the Gemini CLI for one executor spec.
type Executor struct{ base *agentkit.Base }

// New returns an executor for spec (kind "gemini"). The binary is
// spec.Command[0] when set, else "gemini" on PATH or in the repository's
// .cache/agents; a missing binary is reported when Execute runs.
func New(spec *muster.ExecutorSpec) (*Executor, error) {
	b, err := agentkit.NewBase(spec, muster.ExecGemini)
	if err != nil {
		return nil, err
	}
	return &Executor{base: b}, nil
}

// Execute runs one invocation of the Gemini CLI in req.Dir.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	s, err := e.base.Prepare(req)
	if err != nil {
		return nil, err
	}
	spec := e.base.SpecFor(req)
	if err := agentkit.WriteFile(s.Home, ".gemini/settings.json", settings(s.Key != "")); err != nil {
		return nil, agentkit.StartFailure(fmt.Errorf("gemini settings: %w", err))
	}
	p := &parser{}
	resume := resumable(s.Home, req.Dir, req.SessionID)
	inv := s.Invocation(req, buildArgs(spec, req, resume), kindEnv(spec, s.Key), p.line)
	return agentkit.RunResuming(ctx, req, inv, emit, resume, func(inv *agentkit.Invocation) {
		p = &parser{}
		inv.Parse = p.line
		inv.Argv = s.Argv(buildArgs(spec, req, false))
	})
}

// settings is the clone's ~/.gemini/settings.json: API-key auth when a key
// is given (else the seeded login), no telemetry, no auto-update, and few
// retries (muster retries with its own backoff).
func settings(apiKey bool) []byte {
	auth := "oauth-personal"
	if apiKey {
		auth = "gemini-api-key"
	}
	v := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": auth}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"general":  map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true, "maxAttempts": 2},
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return b
}

// buildArgs returns the arguments after the program name. The prompt is on
// stdin; -p "" selects headless mode. No secret is ever an argument.
func buildArgs(spec *muster.ExecutorSpec, req *muster.ExecRequest, resume bool) []string {
	args := []string{"--output-format", "stream-json"}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	switch req.Authority {
	case muster.AuthorityRead:
		args = append(args, "--approval-mode", "plan")
	case muster.AuthorityShell:
		args = append(args, "--approval-mode", "yolo")
	default:
		args = append(args, "--approval-mode", "auto_edit")
	}
	if req.Scratch != "" {
		args = append(args, "--include-directories", req.Scratch)
	}
	if resume {
		args = append(args, "--resume", req.SessionID)
	}
	args = append(args, spec.Args...)
	return append(args, "--prompt", "")
}

// kindEnv returns the variables the Gemini CLI needs.
func kindEnv(spec *muster.ExecutorSpec, key string) map[string]string {
	env := map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"}
	if key != "" {
		env["GEMINI_API_KEY"] = key
	}
	if spec.BaseURL != "" {
		env["GOOGLE_GEMINI_BASE_URL"] = strings.TrimSuffix(strings.TrimSuffix(spec.BaseURL, "/"), "/v1beta")
	}
	return env
}

// resumable reports whether the session's chat file is in this home, in
// the project of the working directory (the CLI resumes only there): each
// project directory under ~/.gemini/tmp names its root in .project_root,
// and chat files are named session-<time>-<first 8 characters of the id>.
func resumable(home, dir, id string) bool {
	if len(id) < 8 || strings.ContainsAny(id, `/\*?[`) {
		return false
	}
	roots := map[string]bool{filepath.Clean(dir): true}
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		roots[resolved] = true
	}
	projects, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", ".project_root"))
	for _, pr := range projects {
		rel, err := filepath.Rel(home, pr)
		if err != nil {
			continue
		}
		b, err := exchange.ReadFile(home, rel, 1<<12) // the agent's home: no link, no FIFO
		if err != nil || !roots[strings.TrimSpace(string(b))] {
			continue
		}
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(pr), "chats", "session-*-"+id[:8]+".json*"))
		if len(m) > 0 {
			return true
		}
	}
	return false
}

type event struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Role       string          `json:"role"`
	Content    string          `json:"content"`
	ToolName   string          `json:"tool_name"`
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"`
	Message    string          `json:"message"`
	Error      json.RawMessage `json:"error"`
	Stats      *stats          `json:"stats"`
}

type stats struct {
	InputTokens  int64                 `json:"input_tokens"`
	OutputTokens int64                 `json:"output_tokens"`
	Cached       int64                 `json:"cached"`
	Models       map[string]modelStats `json:"models"`
}

type modelStats struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	Cached       int64 `json:"cached"`
}

// parser gathers assistant deltas into messages.
type parser struct {
	text strings.Builder // the assistant message being streamed
	all  strings.Builder // every assistant text of the run
}

func (p *parser) flush(s *agentkit.Stream) {
	if p.text.Len() > 0 {
		s.Message(p.text.String())
		p.text.Reset()
	}
}

// line handles one stream-json line; unknown types are skipped.
func (p *parser) line(line []byte, s *agentkit.Stream) error {
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil {
		return err
	}
	if ev.Type != "message" {
		p.flush(s)
	}
	switch ev.Type {
	case "init":
		s.Model = ev.Model
		s.Session(ev.SessionID)
	case "message":
		if ev.Role == "assistant" {
			p.text.WriteString(ev.Content)
			p.all.WriteString(ev.Content)
		}
	case "tool_use":
		s.Tool(ev.ToolName, ev.Parameters)
	case "tool_result":
		if ev.Status == "error" {
			s.Note("tool failed: " + errorText(ev.Error))
		}
	case "error":
		s.Error(cmp.Or(ev.Message, errorText(ev.Error)))
	case "result":
		s.Done = true
		s.SetFinal(p.all.String())
		if ev.Status != "success" {
			s.Failed = true
			s.Error(errorText(ev.Error))
		}
		if ev.Stats != nil {
			statsUsage(ev.Stats, s)
		}
	}
	return nil
}

// statsUsage emits one usage record per model of the result's stats (the
// flat totals when there is no breakdown); cached input is reported apart.
func statsUsage(st *stats, s *agentkit.Stream) {
	rec := func(model string, in, out, cached int64) {
		if in+out+cached == 0 {
			return
		}
		if cached > in {
			cached = in
		}
		s.UsageRecord(model, muster.Usage{InputTokens: in - cached, OutputTokens: out, CacheReadTokens: cached})
	}
	if len(st.Models) == 0 {
		rec("", st.InputTokens, st.OutputTokens, st.Cached)
		return
	}
	for _, m := range slices.Sorted(maps.Keys(st.Models)) {
		ms := st.Models[m]
		rec(m, ms.InputTokens, ms.OutputTokens, ms.Cached)
	}
}

// errorText reads an error given as a string or as {message, code}.
func errorText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	var obj struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Message
	}
	return string(raw)
}

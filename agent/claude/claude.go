// Package claude drives Claude Code (executor kind "claude-code") in print
// mode with stream-json output: one process per invocation, the prompt on
// stdin, a private config directory per clone, usage and cost from the
// final result event, and --resume for fix rounds.
package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
)

// Executor runs Claude Code for one executor spec.
type Executor struct{ base *agentkit.Base }

// New returns an executor for spec (kind "claude-code"). The binary is
// spec.Command[0] when set, else "claude" on PATH or in the repository's
// .cache/agents; a missing binary is reported when Execute runs.
func New(spec *muster.ExecutorSpec) (*Executor, error) {
	b, err := agentkit.NewBase(spec, muster.ExecClaudeCode)
	if err != nil {
		return nil, err
	}
	return &Executor{base: b}, nil
}

// Execute runs one invocation of Claude Code in req.Dir.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	s, err := e.base.Prepare(req)
	if err != nil {
		return nil, err
	}
	spec := e.base.SpecFor(req)
	resume := resumable(s.Home, req.Dir, req.SessionID)
	inv := s.Invocation(req, buildArgs(spec, req, resume), kindEnv(spec, req, s.Home, s.Key, os.Geteuid() == 0), parseLine)
	return agentkit.RunResuming(ctx, req, inv, emit, resume, func(inv *agentkit.Invocation) {
		inv.Argv = s.Argv(buildArgs(spec, req, false))
	})
}

// readTools are the tools a read-only Claude Code has.
const readTools = "Read,Grep,Glob"

// writeTools are the tools of write authority: file edits, no shell.
const writeTools = "Read,Grep,Glob,Edit,Write,NotebookEdit,TodoWrite"

// buildArgs returns the arguments after the program name. The prompt goes
// on stdin; no secret is ever an argument.
func buildArgs(spec *muster.ExecutorSpec, req *muster.ExecRequest, resume bool) []string {
	args := []string{"-p", "--output-format", "stream-json", "--verbose"}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	args = append(args, "--permission-mode", permissionMode(req))
	switch req.Authority {
	case muster.AuthorityRead:
		args = append(args, "--tools", readTools)
	case muster.AuthorityShell:
	default:
		args = append(args, "--tools", writeTools)
	}
	if req.Scratch != "" {
		args = append(args, "--add-dir", req.Scratch)
	}
	if req.Role == muster.RoleReviewer {
		// The change under review may hold project settings (.claude/,
		// .mcp.json): a reviewer loads only its own home's (muster's
		// template) and no MCP server at all.
		args = append(args, "--setting-sources", "user", "--strict-mcp-config")
	}
	if resume {
		args = append(args, "--resume", req.SessionID)
	}
	return append(args, spec.Args...)
}

// permissionMode maps the authority onto a permission mode. Write
// authority is acceptEdits, except in a worktree inside a .git directory
// (where muster keeps its worktrees): Claude Code refuses every edit there
// as "a sensitive file" unless permissions are bypassed, so it gets
// bypassPermissions, still with only the write tools (no shell).
func permissionMode(req *muster.ExecRequest) string {
	switch req.Authority {
	case muster.AuthorityRead:
		return "default"
	case muster.AuthorityShell:
		return "bypassPermissions"
	}
	if insideGitDir(req.Dir) {
		return "bypassPermissions"
	}
	return "acceptEdits"
}

func insideGitDir(dir string) bool {
	for _, part := range strings.Split(filepath.ToSlash(filepath.Clean(dir)), "/") {
		if part == ".git" {
			return true
		}
	}
	return false
}

// kindEnv returns the variables Claude Code needs: its config directory in
// the clone's home, the key, the base URL, no telemetry or auto-update, and
// few retries (muster retries with its own backoff).
func kindEnv(spec *muster.ExecutorSpec, req *muster.ExecRequest, home, key string, root bool) map[string]string {
	env := map[string]string{
		"CLAUDE_CONFIG_DIR":                        filepath.Join(home, ".claude"),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"CLAUDE_CODE_MAX_RETRIES":                  "2",
	}
	if key != "" {
		env["ANTHROPIC_API_KEY"] = key
	}
	if spec.BaseURL != "" {
		// Claude Code appends /v1/messages itself.
		env["ANTHROPIC_BASE_URL"] = strings.TrimSuffix(strings.TrimSuffix(spec.BaseURL, "/"), "/v1")
	}
	if req.Endpoint != nil && spec.Model != "" {
		// Behind muster's endpoint only the executor's models pass: the
		// CLI's background model is its model too.
		env["ANTHROPIC_SMALL_FAST_MODEL"] = spec.Model
		env["ANTHROPIC_DEFAULT_HAIKU_MODEL"] = spec.Model
	}
	if permissionMode(req) == "bypassPermissions" && root {
		// bypassPermissions is refused for root unless the CLI is told it
		// runs in a sandbox (muster's worktree, with the task's authority).
		env["IS_SANDBOX"] = "1"
	}
	return env
}

// resumable reports whether the session exists in the clone's config
// directory for this working directory: Claude Code finds sessions only
// under the project directory of its cwd, so a session recorded elsewhere
// cannot be resumed (it would fail with "No conversation found").
func resumable(home, dir, id string) bool {
	if id == "" || strings.ContainsAny(id, `/\*?[`) {
		return false
	}
	dirs := []string{dir}
	if resolved, err := filepath.EvalSymlinks(dir); err == nil && resolved != dir {
		dirs = append(dirs, resolved)
	}
	for _, d := range dirs {
		p := filepath.Join(home, ".claude", "projects", projectDir(d), id+".jsonl")
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// projectDir is Claude Code's name for a working directory's project:
// every character other than a letter or digit becomes "-".
func projectDir(dir string) string {
	return nonAlnum().ReplaceAllString(filepath.Clean(dir), "-")
}

var nonAlnum = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9]`) })

type event struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Model     string          `json:"model"`
	Message   *message        `json:"message"`
	Error     json.RawMessage `json:"error"`
	// system/api_retry
	RetryDelayMS int64 `json:"retry_delay_ms"`
	ErrorStatus  int   `json:"error_status"`
	// result
	IsError        bool                  `json:"is_error"`
	APIErrorStatus int                   `json:"api_error_status"`
	Result         string                `json:"result"`
	TotalCostUSD   float64               `json:"total_cost_usd"`
	Usage          *apiUsage             `json:"usage"`
	ModelUsage     map[string]modelUsage `json:"modelUsage"`
	Denials        []struct {
		ToolName string `json:"tool_name"`
	} `json:"permission_denials"`
}

type message struct {
	Model   string  `json:"model"`
	Content []block `json:"content"`
}

type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	IsError bool            `json:"is_error"`
}

type apiUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type modelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

// parseLine handles one stream-json line; unknown types are skipped.
func parseLine(line []byte, s *agentkit.Stream) error {
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil {
		return err
	}
	switch ev.Type {
	case "system":
		switch ev.Subtype {
		case "init":
			s.Model = ev.Model
			s.Session(ev.SessionID)
		case "api_retry":
			s.RetryAfterMS = ev.RetryDelayMS
			s.Note(fmt.Sprintf("api retry after %d ms (status %d)", ev.RetryDelayMS, ev.ErrorStatus))
		}
	case "assistant":
		if ev.Message == nil {
			return nil
		}
		for _, b := range ev.Message.Content {
			switch b.Type {
			case "text":
				if ev.Message.Model == "<synthetic>" {
					s.Error(b.Text)
				}
				s.Message(b.Text)
			case "tool_use":
				s.Tool(b.Name, b.Input)
			}
		}
	case "user":
		if ev.Message != nil {
			for _, b := range ev.Message.Content {
				if b.Type == "tool_result" && b.IsError {
					s.Note("tool failed")
				}
			}
		}
	case "result":
		s.Done = true
		s.Session(ev.SessionID)
		s.SetFinal(ev.Result)
		for _, d := range ev.Denials {
			s.Note("permission denied: " + d.ToolName)
		}
		if ev.IsError {
			s.Failed = true
			s.Status = ev.APIErrorStatus
			s.Error(ev.Result)
		}
		resultUsage(&ev, s)
	}
	return nil
}

// resultUsage emits the usage of the whole run from the result event: one
// record per model of modelUsage with its cost, else the flat usage with
// total_cost_usd.
func resultUsage(ev *event, s *agentkit.Stream) {
	if len(ev.ModelUsage) > 0 {
		for _, m := range slices.Sorted(maps.Keys(ev.ModelUsage)) {
			mu := ev.ModelUsage[m]
			s.UsageRecord(m, muster.Usage{
				InputTokens: mu.InputTokens, OutputTokens: mu.OutputTokens,
				CacheReadTokens: mu.CacheReadInputTokens, CacheWriteTokens: mu.CacheCreationInputTokens,
				CostMicros: muster.MicrosFromUSD(mu.CostUSD),
			})
		}
		return
	}
	if ev.Usage != nil {
		s.UsageRecord("", muster.Usage{
			InputTokens: ev.Usage.InputTokens, OutputTokens: ev.Usage.OutputTokens,
			CacheReadTokens: ev.Usage.CacheReadInputTokens, CacheWriteTokens: ev.Usage.CacheCreationInputTokens,
			CostMicros: muster.MicrosFromUSD(ev.TotalCostUSD),
		})
	}
}

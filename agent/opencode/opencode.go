// Package opencode drives opencode (executor kind "opencode") with
// `opencode run --format json`: one process per invocation, the prompt as
// the message argument, a private HOME and config file per clone (the
// provider's baseURL, permissions from the task's authority), usage and
// cost from step_finish events, and --session for fix rounds.
package opencode

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
)

// Executor runs opencode for one executor spec.
type Executor struct{ base *agentkit.Base }

// New returns an executor for spec (kind "opencode"). The binary is
// spec.Command[0] when set, else "opencode" on PATH or in the repository's
// .cache/agents; a missing binary is reported when Execute runs.
func New(spec *muster.ExecutorSpec) (*Executor, error) {
	b, err := agentkit.NewBase(spec, muster.ExecOpencode)
	if err != nil {
		return nil, err
	}
	return &Executor{base: b}, nil
}

// Execute runs one invocation of opencode in req.Dir.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	s, err := e.base.Prepare(req)
	if err != nil {
		return nil, err
	}
	spec := e.base.SpecFor(req)
	cfg, model := config(spec, req.Authority, s.KeyName, s.Key != "")
	if err := agentkit.WriteFile(s.Home, "opencode.json", cfg); err != nil {
		return nil, agentkit.StartFailure(fmt.Errorf("opencode config: %w", err))
	}
	_, statErr := os.Stat(filepath.Join(s.Home, ".local", "share", "opencode"))
	resume := req.SessionID != "" && statErr == nil
	prompt, attach, err := promptArg(agentkit.Prompt(req), s.Home)
	if err != nil {
		return nil, agentkit.StartFailure(err)
	}
	parse := func(line []byte, st *agentkit.Stream) error {
		if st.Model == "" {
			st.Model = model
		}
		return parseLine(line, st)
	}
	inv := s.Invocation(req, buildArgs(spec, req, model, resume, prompt, attach), kindEnv(s.Home, filepath.Join(s.Home, "opencode.json"), s.KeyName, s.Key), parse)
	inv.Stdin = "" // the prompt is the message argument
	return agentkit.RunResuming(ctx, req, inv, emit, resume, func(inv *agentkit.Invocation) {
		inv.Argv = s.Argv(buildArgs(spec, req, model, false, prompt, attach))
	})
}

// knownProviders are opencode's built-in providers whose options muster
// may set; any other provider in "provider/model" is declared as an
// OpenAI-compatible (Chat Completions) provider.
var knownProviders = map[string]bool{"anthropic": true, "openai": true, "google": true}

// config returns the clone's opencode.json and the "provider/model" to use.
// The key is referenced as {env:NAME}, never written into the file.
func config(spec *muster.ExecutorSpec, auth muster.Authority, keyName string, haveKey bool) ([]byte, string) {
	v := map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"permission": permissions(auth),
	}
	model := spec.Model
	provider, name, hasProvider := strings.Cut(model, "/")
	if model != "" && !hasProvider && spec.BaseURL != "" {
		provider, name, model = "muster", model, "muster/"+model
		hasProvider = true
	}
	opts := map[string]any{}
	if spec.BaseURL != "" {
		opts["baseURL"] = spec.BaseURL
	}
	if haveKey {
		opts["apiKey"] = "{env:" + keyName + "}"
	}
	if hasProvider && len(opts) > 0 {
		p := map[string]any{"options": opts}
		if !knownProviders[provider] && spec.BaseURL != "" {
			p["npm"] = "@ai-sdk/openai-compatible"
			p["name"] = provider
			p["models"] = map[string]any{name: map[string]any{"name": name, "tool_call": true}}
		}
		v["provider"] = map[string]any{provider: p}
	}
	if model != "" {
		v["model"] = model
		v["small_model"] = model
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return b, model
}

// permissions maps an authority onto opencode's permission settings.
func permissions(auth muster.Authority) map[string]any {
	switch auth {
	case muster.AuthorityRead:
		return map[string]any{"edit": "deny", "bash": "deny", "webfetch": "allow"}
	case muster.AuthorityShell:
		return map[string]any{"edit": "allow", "bash": "allow", "webfetch": "allow"}
	}
	return map[string]any{"edit": "allow", "bash": "deny", "webfetch": "allow"}
}

// maxArgPrompt is the longest prompt passed as an argument; Linux refuses
// a single argument over 128 KiB.
const maxArgPrompt = 64 << 10

// promptArg returns the message argument for prompt. A longer prompt is
// written to a file (in scratch, else the clone's home) that opencode
// attaches and inlines, and the message points at it.
func promptArg(prompt, home string) (msg, attach string, err error) {
	if len(prompt) <= maxArgPrompt {
		return prompt, "", nil
	}
	attach = filepath.Join(home, "opencode-prompt.md")
	if err := agentkit.WriteFile(home, "opencode-prompt.md", []byte(prompt)); err != nil {
		return "", "", fmt.Errorf("opencode prompt file: %w", err)
	}
	return "Your task is in the attached file " + filepath.Base(attach) + ". Read it all and do what it says.", attach, nil
}

// buildArgs returns the arguments after the program name; the prompt is
// the message argument, after "--", with an attached file when it is
// long. No secret is ever an argument.
func buildArgs(spec *muster.ExecutorSpec, req *muster.ExecRequest, model string, resume bool, prompt, attach string) []string {
	args := []string{"run", "--format", "json"}
	if model != "" {
		args = append(args, "--model", model)
	}
	if req.Authority == muster.AuthorityShell {
		args = append(args, "--auto")
	}
	if resume {
		args = append(args, "--session", req.SessionID)
	}
	if attach != "" {
		args = append(args, "--file", attach)
	}
	args = append(args, spec.Args...)
	return append(args, "--", prompt)
}

// kindEnv returns the variables opencode needs: XDG directories in the
// clone's home, the config file, the key, and no network side trips.
func kindEnv(home, cfgPath, keyName, key string) map[string]string {
	env := map[string]string{
		"XDG_CONFIG_HOME":                  home + "/.config",
		"XDG_DATA_HOME":                    home + "/.local/share",
		"XDG_CACHE_HOME":                   home + "/.cache",
		"XDG_STATE_HOME":                   home + "/.local/state",
		"OPENCODE_CONFIG":                  cfgPath,
		"OPENCODE_DISABLE_AUTOUPDATE":      "1",
		"OPENCODE_DISABLE_SHARE":           "1",
		"OPENCODE_DISABLE_MODELS_FETCH":    "1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD":    "1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
	}
	if key != "" {
		env[keyName] = key
	}
	return env
}

type event struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      *part  `json:"part"`
	Error     *struct {
		Name string `json:"name"`
		Data struct {
			Message    string `json:"message"`
			StatusCode int    `json:"statusCode"`
		} `json:"data"`
	} `json:"error"`
}

type part struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
	State  *struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
	} `json:"state"`
	Tokens *struct {
		Input  int64 `json:"input"`
		Output int64 `json:"output"`
		Cache  struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
	Cost float64 `json:"cost"`
}

// parseLine handles one --format json line; unknown types are skipped.
func parseLine(line []byte, s *agentkit.Stream) error {
	var ev event
	if err := json.Unmarshal(line, &ev); err != nil {
		return err
	}
	s.Session(ev.SessionID)
	switch ev.Type {
	case "text":
		if ev.Part != nil {
			s.Message(ev.Part.Text)
			s.SetFinal(ev.Part.Text)
		}
	case "tool_use":
		if ev.Part != nil && ev.Part.State != nil {
			s.Tool(ev.Part.Tool, ev.Part.State.Input)
			if ev.Part.State.Status == "error" {
				s.Note("tool failed: " + ev.Part.Tool)
			}
		}
	case "step_finish":
		if p := ev.Part; p != nil {
			if p.Tokens != nil {
				s.UsageRecord("", muster.Usage{
					InputTokens: p.Tokens.Input, OutputTokens: p.Tokens.Output,
					CacheReadTokens: p.Tokens.Cache.Read, CacheWriteTokens: p.Tokens.Cache.Write,
					CostMicros: muster.MicrosFromUSD(p.Cost),
				})
			}
			if p.Reason != "tool-calls" {
				s.Done = true
			}
		}
	case "error":
		s.Done = true
		s.Failed = true
		if ev.Error != nil {
			s.Status = ev.Error.Data.StatusCode
			s.Error(cmp.Or(ev.Error.Data.Message, ev.Error.Name))
		}
	}
	return nil
}

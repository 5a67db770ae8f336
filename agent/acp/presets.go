package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/exchange"
)

// preset is what muster knows about one ACP agent: how to start it, the
// variables that point it at the executor's model endpoint, files it
// reads, and the session mode each authority maps to.
type preset struct {
	// args are the arguments after the program (spec.Args follow).
	args func(spec *muster.ExecutorSpec, req *muster.ExecRequest) []string
	// env are the agent's variables (key, base URL, config directories).
	env func(spec *muster.ExecutorSpec, req *muster.ExecRequest, home, key string) map[string]string
	// prepare writes the agent's configuration into the clone's home.
	prepare func(spec *muster.ExecutorSpec, req *muster.ExecRequest, home, keyName string) error
	// mode is the session mode for an authority ("": leave it).
	mode func(auth muster.Authority, dir string) string
	// modelByEnv says the model is passed at start (env or flags), so a
	// model the agent's session does not list is not an error.
	modelByEnv bool
	// usage, when set, reads a session's cumulative usage from the
	// agent's own record in the clone's home (for agents whose ACP
	// replies carry none); the turn's share is the difference.
	usage func(home, session string) (muster.Usage, bool)
	// after cleans the clone's home once the agent has exited.
	after func(home string)
	// missingAsEmpty answers fs/read_text_file of a missing file inside
	// the worktree with empty content instead of an error: the Gemini CLI
	// (and Qwen Code, its fork) cannot tell a client's "not found" error
	// from any other and then refuses to create the file.
	missingAsEmpty bool
	// errorPrefix marks a turn that failed: the agent reports a failed
	// model call as its last message, starting so, and ends the turn
	// normally (the Copilot CLI does).
	errorPrefix string
}

var presets = map[muster.ExecKind]*preset{
	muster.ExecACP:       generic,
	muster.ExecClaudeACP: claudeACP,
	muster.ExecCodexACP:  codexACP,
	muster.ExecGeminiACP: geminiACP,
	muster.ExecQwen:      qwen,
	muster.ExecCopilot:   copilot,
}

func noArgs(*muster.ExecutorSpec, *muster.ExecRequest) []string { return nil }

func noPrepare(*muster.ExecutorSpec, *muster.ExecRequest, string, string) error { return nil }

// generic runs spec.Command; the key, when api_key_env names one, is
// passed under its own name.
var generic = &preset{
	args: noArgs,
	env: func(spec *muster.ExecutorSpec, _ *muster.ExecRequest, _ string, key string) map[string]string {
		env := map[string]string{}
		if key != "" && spec.APIKeyEnv != "" {
			env[spec.APIKeyEnv] = key
		}
		return env
	},
	prepare: noPrepare,
}

// claudeACP is Claude Code through Zed's adapter (claude-agent-acp): the
// Claude Agent SDK under ACP. Its modes are Claude Code's permission modes.
var claudeACP = &preset{
	args: noArgs,
	env: func(spec *muster.ExecutorSpec, req *muster.ExecRequest, home, key string) map[string]string {
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
			env["ANTHROPIC_BASE_URL"] = strings.TrimSuffix(strings.TrimSuffix(spec.BaseURL, "/"), "/v1")
		}
		if spec.Model != "" {
			env["ANTHROPIC_MODEL"] = spec.Model
		}
		if os.Geteuid() == 0 {
			// The adapter offers the bypassPermissions mode, which
			// Claude Code refuses to start with as root unless told it
			// runs in a sandbox; muster still answers every permission
			// request in the other modes.
			env["IS_SANDBOX"] = "1"
		}
		return env
	},
	prepare: noPrepare,
	mode: func(auth muster.Authority, _ string) string {
		if auth == muster.AuthorityShell {
			return "bypassPermissions"
		}
		// Every edit and command asks: muster answers from the authority.
		return "default"
	},
	modelByEnv: true,
}

// codexACP is Codex through Zed's adapter (codex-acp): its config.toml in
// the clone's CODEX_HOME (a custom provider for base_url), the model and
// the sandbox as -c overrides. Read and write authority ask for approval
// of every command that is not known safe (approval_policy "untrusted"),
// which muster answers; write keeps Codex's workspace-write sandbox.
var codexACP = &preset{
	args: func(spec *muster.ExecutorSpec, req *muster.ExecRequest) []string {
		var args []string
		if spec.Model != "" {
			args = append(args, "-c", "model="+agentkit.TOMLString(spec.Model))
		}
		switch req.Authority {
		case muster.AuthorityRead:
			args = append(args, "-c", `sandbox_mode="read-only"`, "-c", `approval_policy="untrusted"`)
		case muster.AuthorityShell:
			args = append(args, "-c", `sandbox_mode="danger-full-access"`, "-c", `approval_policy="never"`)
		default:
			args = append(args, "-c", `sandbox_mode="workspace-write"`, "-c", `approval_policy="untrusted"`)
		}
		return args
	},
	env: func(spec *muster.ExecutorSpec, _ *muster.ExecRequest, home, key string) map[string]string {
		env := map[string]string{"CODEX_HOME": filepath.Join(home, ".codex")}
		if key == "" {
			return env
		}
		if spec.BaseURL != "" {
			env[agentkit.KeyName(spec, agentkit.Lookup(muster.ExecCodexACP))] = key
		} else {
			env["OPENAI_API_KEY"], env["CODEX_API_KEY"] = key, key
		}
		return env
	},
	prepare: func(spec *muster.ExecutorSpec, _ *muster.ExecRequest, home, keyName string) error {
		return agentkit.WriteFile(home, ".codex/config.toml", []byte(agentkit.CodexConfig(spec, keyName, "muster")))
	},
	modelByEnv: true,
	usage:      codexTotal,
	// Codex snapshots the shell's environment, the API key included when
	// it cannot mask it, into its home: never leave that behind.
	// Through a root on the home: the agent may have made .codex a link.
	after: func(home string) { _ = exchange.RemoveAll(home, filepath.Join(".codex", "shell_snapshots")) },
}

// geminiSettings is a Gemini CLI (or Qwen Code) home's settings.json: the
// auth type, no telemetry or auto-update, few retries.
func geminiSettings(auth string) []byte {
	v := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": auth}},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
		"general":  map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true, "maxAttempts": 2},
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return b
}

// approvalMode maps the authority onto Gemini CLI's and Qwen Code's
// approval modes: every tool call of read and write authority asks
// (muster answers), shell approves all.
func approvalMode(auth muster.Authority) string {
	if auth == muster.AuthorityShell {
		return "yolo"
	}
	return "default"
}

// geminiACP is the Gemini CLI in ACP mode (--acp).
var geminiACP = &preset{
	args: func(spec *muster.ExecutorSpec, req *muster.ExecRequest) []string {
		args := []string{"--approval-mode", approvalMode(req.Authority)}
		if spec.Model != "" {
			args = append(args, "--model", spec.Model)
		}
		return args
	},
	env: func(spec *muster.ExecutorSpec, _ *muster.ExecRequest, _, key string) map[string]string {
		env := map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"}
		if key != "" {
			env["GEMINI_API_KEY"] = key
		}
		if spec.BaseURL != "" {
			env["GOOGLE_GEMINI_BASE_URL"] = spec.BaseURL
		}
		return env
	},
	prepare: func(_ *muster.ExecutorSpec, _ *muster.ExecRequest, home, keyName string) error {
		auth := "oauth-personal"
		if os.Getenv(keyName) != "" {
			auth = "gemini-api-key"
		}
		return agentkit.WriteFile(home, ".gemini/settings.json", geminiSettings(auth))
	},
	modelByEnv:     true,
	missingAsEmpty: true,
}

// qwen is Qwen Code in ACP mode (--acp) on an OpenAI-compatible endpoint:
// OPENAI_API_KEY, OPENAI_BASE_URL and OPENAI_MODEL, auth type openai.
var qwen = &preset{
	args: func(spec *muster.ExecutorSpec, req *muster.ExecRequest) []string {
		args := []string{"--auth-type", "openai", "--approval-mode", approvalMode(req.Authority)}
		if spec.Model != "" {
			args = append(args, "--model", spec.Model)
		}
		return args
	},
	env: func(spec *muster.ExecutorSpec, _ *muster.ExecRequest, _, key string) map[string]string {
		env := map[string]string{"QWEN_CODE_TRUST_WORKSPACE": "true"}
		if key != "" {
			env["OPENAI_API_KEY"] = key
		}
		if spec.BaseURL != "" {
			env["OPENAI_BASE_URL"] = spec.BaseURL
		}
		if spec.Model != "" {
			env["OPENAI_MODEL"] = spec.Model
		}
		return env
	},
	prepare: func(_ *muster.ExecutorSpec, _ *muster.ExecRequest, home, _ string) error {
		return agentkit.WriteFile(home, ".qwen/settings.json", geminiSettings("openai"))
	},
	modelByEnv:     true,
	missingAsEmpty: true,
}

// copilot is the GitHub Copilot CLI in ACP mode (--acp). With base_url it
// uses that endpoint as its own model provider (BYOK: an OpenAI-compatible
// server unless env sets COPILOT_PROVIDER_TYPE) and runs offline, needing
// no GitHub login; without one it needs the user's Copilot login.
var copilot = &preset{
	args: func(_ *muster.ExecutorSpec, req *muster.ExecRequest) []string {
		if req.Authority == muster.AuthorityShell {
			return []string{"--allow-all"}
		}
		return nil
	},
	env: func(spec *muster.ExecutorSpec, _ *muster.ExecRequest, home, key string) map[string]string {
		env := map[string]string{"COPILOT_DISABLE_TELEMETRY": "1", "XDG_CONFIG_HOME": filepath.Join(home, ".config"),
			"XDG_STATE_HOME": filepath.Join(home, ".local", "state")}
		if spec.BaseURL != "" {
			env["COPILOT_PROVIDER_BASE_URL"] = spec.BaseURL
			env["COPILOT_PROVIDER_TYPE"] = "openai"
			env["COPILOT_OFFLINE"] = "true"
			if key != "" {
				env["COPILOT_PROVIDER_API_KEY"] = key
			}
		} else if key != "" {
			env["COPILOT_GITHUB_TOKEN"] = key
		}
		if spec.Model != "" {
			env["COPILOT_MODEL"] = spec.Model
		}
		return env
	},
	prepare:     noPrepare,
	modelByEnv:  true,
	errorPrefix: "Error: ",
}

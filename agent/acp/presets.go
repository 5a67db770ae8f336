package acp

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
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
}

var presets = map[string]*preset{
	muster.ExecACP:       generic,
	muster.ExecClaudeACP: claudeACP,
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

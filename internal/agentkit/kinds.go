// Package agentkit holds what the agent CLI adapters (agent/claude,
// agent/codex, agent/gemini, agent/opencode) share: the executor base
// (spec, kind, binary) and the prologue of each invocation, the table of known
// kinds, binary lookup, per-clone homes, the scrubbed environment, the
// run loop over internal/proc, stream bookkeeping, failure classification
// and review findings. It knows no single CLI's wire format.
package agentkit

import (
	"github.com/muster-run/muster"
)

// Enforcement grades how a kind enforces an authority.
const (
	Enforced = "enforced" // the CLI removes the capability or sandboxes it
	Advisory = "advisory" // a mode the CLI may not enforce
	Full     = "full"     // nothing is restricted (shell authority)
)

// Kind is what muster knows about one agent CLI.
type Kind struct {
	// Name is the muster executor kind.
	Name muster.ExecKind
	// Binary is the command name looked up on PATH and in .cache/agents.
	Binary string
	// Package is the npm package that installs Binary.
	Package string
	// VersionArgs print the CLI's version.
	VersionArgs []string
	// KeyEnv is the variable the CLI reads its API key from; the default
	// api_key_env.
	KeyEnv string
	// LoginFiles are credential files of a logged-in user, relative to the
	// user's home; they are copied into each clone's home when no api_key_env
	// is configured.
	LoginFiles []string
	// ConfigFiles are the user's own instruction files for the CLI,
	// relative to the user's home: copied read-only (0444) into every
	// invocation's home, where the CLI reads them (SeedConfig). The
	// user's settings files are not: they can run commands (hooks, MCP
	// servers, a key helper) or point the CLI elsewhere, and muster's
	// template decides those (docs/agents.md).
	ConfigFiles []string
	// Authority maps each authority to its enforcement and how.
	Authority map[muster.Authority]Grade
	// ACP says the program speaks the Agent Client Protocol on stdio;
	// doctor asks it for its version with an initialize handshake.
	ACP bool
	// ACPArgs are the arguments that put the program in ACP mode.
	ACPArgs []string
	// Note is what doctor says about the kind besides its checks.
	Note string
}

// Grade is how one authority is applied by a kind.
type Grade struct {
	Level string // Enforced or Advisory
	How   string // the flags or settings muster uses
}

// Kinds lists the agent CLIs muster drives, in a fixed order.
var Kinds = []Kind{
	{
		Name: muster.ExecClaudeCode, Binary: "claude", Package: "@anthropic-ai/claude-code", VersionArgs: []string{"--version"},
		KeyEnv:      "ANTHROPIC_API_KEY",
		LoginFiles:  []string{".claude/.credentials.json"},
		ConfigFiles: []string{".claude/CLAUDE.md"},
		Authority: map[muster.Authority]Grade{
			muster.AuthorityRead:  {Enforced, "--tools Read,Grep,Glob (only read tools exist)"},
			muster.AuthorityWrite: {Enforced, "--tools Read,Grep,Glob,Edit,Write,NotebookEdit,TodoWrite (no shell tool); --permission-mode acceptEdits, or bypassPermissions in worktrees under .git, where Claude Code refuses edits otherwise"},
			muster.AuthorityShell: {Full, "--permission-mode bypassPermissions (full access)"},
		},
	},
	{
		Name: muster.ExecCodex, Binary: "codex", Package: "@openai/codex", VersionArgs: []string{"--version"},
		KeyEnv:      "OPENAI_API_KEY",
		LoginFiles:  []string{".codex/auth.json"},
		ConfigFiles: []string{".codex/AGENTS.md"},
		Authority: map[muster.Authority]Grade{
			muster.AuthorityRead:  {Enforced, "--sandbox read-only (OS sandbox)"},
			muster.AuthorityWrite: {Enforced, "--sandbox workspace-write (writes confined to the worktree; sandboxed shell remains)"},
			muster.AuthorityShell: {Full, "--dangerously-bypass-approvals-and-sandbox (full access)"},
		},
	},
	{
		Name: muster.ExecGemini, Binary: "gemini", Package: "@google/gemini-cli", VersionArgs: []string{"--version"},
		KeyEnv:      "GEMINI_API_KEY",
		LoginFiles:  []string{".gemini/oauth_creds.json", ".gemini/google_accounts.json"},
		ConfigFiles: []string{".gemini/GEMINI.md"},
		Authority: map[muster.Authority]Grade{
			muster.AuthorityRead:  {Enforced, "--approval-mode plan (no shell tool; file writes refused outside the CLI's plans directory in the clone's home)"},
			muster.AuthorityWrite: {Enforced, "--approval-mode auto_edit (edit tools approved; headless mode offers no shell tool)"},
			muster.AuthorityShell: {Full, "--approval-mode yolo (full access)"},
		},
	},
	{
		Name: muster.ExecOpencode, Binary: "opencode", Package: "opencode-ai", VersionArgs: []string{"--version"},
		KeyEnv:      "ANTHROPIC_API_KEY",
		LoginFiles:  []string{".local/share/opencode/auth.json"},
		ConfigFiles: []string{".config/opencode/AGENTS.md"},
		Authority: map[muster.Authority]Grade{
			muster.AuthorityRead:  {Enforced, `permission {"edit":"deny","bash":"deny"} in the clone's config (the CLI removes its edit, write and bash tools)`},
			muster.AuthorityWrite: {Enforced, `permission {"edit":"allow","bash":"deny"} in the clone's config (the CLI removes its bash tool)`},
			muster.AuthorityShell: {Full, `permission {"edit":"allow","bash":"allow"} and --auto (full access)`},
		},
	},
	{
		Name: muster.ExecPi, Binary: "pi", Package: "@mariozechner/pi-coding-agent", VersionArgs: []string{"--version"},
		KeyEnv:     "OPENAI_API_KEY",
		LoginFiles: []string{".pi/agent/auth.json"},
		Authority: map[muster.Authority]Grade{
			muster.AuthorityRead:  {Enforced, "--tools read,grep,find,ls (pi has no other tool then)"},
			muster.AuthorityWrite: {Enforced, "--tools read,grep,find,ls,edit,write (no bash tool)"},
			muster.AuthorityShell: {Full, "--tools read,grep,find,ls,edit,write,bash (full access)"},
		},
	},
	{
		Name: muster.ExecACP, ACP: true,
		Authority: acpAuthority("", "", ""),
		Note:      "any ACP agent: set command = [program, args...]",
	},
	{
		Name: muster.ExecClaudeACP, Binary: "claude-agent-acp", Package: "@zed-industries/claude-agent-acp", ACP: true,
		KeyEnv:      "ANTHROPIC_API_KEY",
		LoginFiles:  []string{".claude/.credentials.json"},
		ConfigFiles: []string{".claude/CLAUDE.md"},
		Authority: acpAuthority(" (mode default)", " (mode default: every edit and command asks)",
			" (mode bypassPermissions)"),
	},
	{
		Name: muster.ExecCodexACP, Binary: "codex-acp", Package: "@zed-industries/codex-acp", ACP: true,
		KeyEnv:      "OPENAI_API_KEY",
		LoginFiles:  []string{".codex/auth.json"},
		ConfigFiles: []string{".codex/AGENTS.md"},
		Authority: acpAuthority(" (sandbox read-only, approval untrusted)", " (sandbox workspace-write, approval untrusted)",
			" (sandbox danger-full-access, approval never)"),
	},
	{
		Name: muster.ExecGeminiACP, Binary: "gemini", Package: "@google/gemini-cli", ACP: true, ACPArgs: []string{"--acp"},
		KeyEnv:      "GEMINI_API_KEY",
		LoginFiles:  []string{".gemini/oauth_creds.json", ".gemini/google_accounts.json"},
		ConfigFiles: []string{".gemini/GEMINI.md"},
		Authority:   acpAuthority(" (--approval-mode default)", " (--approval-mode default)", " (--approval-mode yolo)"),
	},
	{
		Name: muster.ExecQwen, Binary: "qwen", Package: "@qwen-code/qwen-code", ACP: true, ACPArgs: []string{"--acp"},
		KeyEnv:    "OPENAI_API_KEY",
		Authority: acpAuthority(" (--approval-mode default)", " (--approval-mode default)", " (--approval-mode yolo)"),
		Note:      "Qwen Code 0.15.10 is the newest release that runs on Node 20 (later ones need Node 22)",
	},
	{
		Name: muster.ExecCopilot, Binary: "copilot", Package: "@github/copilot", ACP: true, ACPArgs: []string{"--acp"},
		KeyEnv:    "COPILOT_PROVIDER_API_KEY",
		Authority: acpAuthority("", "", " (--allow-all)"),
		Note:      "with base_url: the endpoint is Copilot's own model provider (BYOK, offline, no GitHub login); without: the user's Copilot login",
	},
}

// acpAuthority is how muster answers an ACP agent's permission requests
// and file requests; every preset adds its own mode.
func acpAuthority(read, write, shell string) map[muster.Authority]Grade {
	return map[muster.Authority]Grade{
		muster.AuthorityRead:  {Enforced, "muster refuses every edit and command the agent asks to make, and fs/write_text_file" + read},
		muster.AuthorityWrite: {Enforced, "muster allows edits inside the worktree and refuses commands other than the task's gates; fs/* only inside the worktree" + write},
		muster.AuthorityShell: {Full, "muster allows every request; terminals offered" + shell},
	}
}

// Lookup returns the kind named name, or nil.
func Lookup(name muster.ExecKind) *Kind {
	for i := range Kinds {
		if Kinds[i].Name == name {
			return &Kinds[i]
		}
	}
	return nil
}

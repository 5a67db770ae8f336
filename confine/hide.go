package confine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CredentialPaths are the paths below the user's home that every
// confined invocation finds empty: keys and logins of ssh, the clouds
// (AWS, Google, Azure, Kubernetes), GitHub's CLI, git's credential
// stores, netrc, Docker, the package registries' upload tokens (npm,
// PyPI, Cargo: ~/.cargo itself is a toolchain, bound back read-only),
// Terraform, Vault, GnuPG, muster's own config (the fleet's
// credentials) and the agents' own logins (muster seeds a coder's home
// with those from outside the sandbox, agentkit.SeedLogin; no adapter
// reads the user's config directory from inside).
var CredentialPaths = []string{".ssh", ".aws", ".config/gh", ".netrc", ".docker", ".npmrc", ".gnupg", ".config/muster",
	".git-credentials", ".config/git/credentials", ".kube", ".config/gcloud", ".azure", ".pypirc",
	".cargo/credentials.toml", ".cargo/credentials", ".terraform.d", ".vault-token",
	".claude/.credentials.json", ".claude.json", ".codex/auth.json", ".gemini", ".local/share/opencode/auth.json", ".pi/agent/auth.json"}

// CredentialEnv are the variables that name credential files or
// directories elsewhere, each with the paths below it to hide ("" for
// the whole of it).
var CredentialEnv = map[string][]string{
	"KUBECONFIG": {""}, "DOCKER_CONFIG": {""}, "AWS_SHARED_CREDENTIALS_FILE": {""}, "CLOUDSDK_CONFIG": {""},
	"GOOGLE_APPLICATION_CREDENTIALS": {""}, "AZURE_CONFIG_DIR": {""}, "GNUPGHOME": {""},
	"CARGO_HOME": {"credentials.toml", "credentials"}, "CODEX_HOME": {"auth.json"},
	"CLAUDE_CONFIG_DIR": {".credentials.json"}, "XDG_DATA_HOME": {"opencode/auth.json"},
	"XDG_CONFIG_HOME": {"gh", "git/credentials", "gcloud", "muster"},
}

// RegistryCredentials are the credential paths below the user's home
// that setup steps alone may read (read-only): a private registry's token
// for `npm ci`. Agents and gates find them hidden like the rest of
// CredentialPaths.
var RegistryCredentials = []string{".npmrc"}

// SocketDirs are the directories of the user's and the system's
// pathname sockets (tmux, ssh-agent, Docker, D-Bus), hidden from every
// confined invocation; /tmp's are in its private /tmp already.
var SocketDirs = []string{"/run", "/var/run"}

// RootOnly are hidden besides when muster runs as root: a uid-0 process
// without capabilities still reads what root owns.
var RootOnly = []string{"/root", "/etc/shadow", "/etc/gshadow"}

// DefaultHide is the hide list of a confined invocation of a user whose
// home is home: SocketDirs, $XDG_RUNTIME_DIR, CredentialPaths below home
// and, as root, RootOnly. What the invocation is given (its clone, its
// own directories, writable and read-only paths) is bound back above
// them.
func DefaultHide(home string) []string {
	out := append([]string(nil), SocketDirs...)
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		out = append(out, d)
	}
	if filepath.IsAbs(home) {
		for _, p := range CredentialPaths {
			out = append(out, filepath.Join(home, p))
		}
	}
	for name, rels := range CredentialEnv {
		for _, d := range filepath.SplitList(os.Getenv(name)) {
			for _, rel := range rels {
				if filepath.IsAbs(d) {
					out = append(out, filepath.Join(d, rel))
				}
			}
		}
	}
	out = append(out, SocketsNamedByEnv()...)
	if os.Geteuid() == 0 {
		out = append(out, RootOnly...)
	}
	return out
}

// SocketsNamedByEnv are the pathname sockets (and tmux's socket
// directory) that the user's environment names wherever they lie:
// TMUX's socket, TMUX_TMPDIR's tmux-UID, SSH_AUTH_SOCK, a unix:// DOCKER_HOST and
// the D-Bus session bus. Outside /tmp and the SocketDirs neither the
// private /tmp nor the empty /run covers them, and Landlock below ABI 9
// does not govern connecting to one: a confined agent drove the user's
// tmux through one (TestSandboxSocketsNamedByEnvUnreachable).
func SocketsNamedByEnv() []string {
	var out []string
	add := func(p string) {
		if filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	if sock, _, _ := strings.Cut(os.Getenv("TMUX"), ","); sock != "" {
		add(sock)
	}
	if d := os.Getenv("TMUX_TMPDIR"); d != "" {
		// tmux's own directory in it, not the directory itself (which
		// may be the home or /tmp).
		add(filepath.Join(d, "tmux-"+strconv.Itoa(os.Getuid())))
	}
	add(os.Getenv("SSH_AUTH_SOCK"))
	if p, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		add(p)
	}
	for _, a := range strings.Split(os.Getenv("DBUS_SESSION_BUS_ADDRESS"), ";") {
		_, kv, _ := strings.Cut(a, ":")
		for _, f := range strings.Split(kv, ",") {
			if p, ok := strings.CutPrefix(f, "path="); ok {
				add(p)
			}
		}
	}
	return out
}

// ToolchainPaths are the toolchains and package caches below the user's
// home that every confined invocation sees read-only, even where a cover
// hides the home (/root, as root): Go's module cache, Rust's, npm's,
// pip's, node and Python version managers, user-installed programs.
var ToolchainPaths = []string{"go", ".cargo", ".rustup", ".npm", ".cache/pip", ".nvm", ".pyenv", ".bun", ".deno", ".m2", ".gradle", ".local/bin"}

// ToolchainEnv are the variables that name such places elsewhere.
var ToolchainEnv = []string{"GOPATH", "GOMODCACHE", "GOROOT", "CARGO_HOME", "RUSTUP_HOME", "NVM_DIR", "PYENV_ROOT", "npm_config_cache"}

// Toolchains returns the ToolchainPaths below home and the absolute
// places ToolchainEnv names (GOPATH may list several).
func Toolchains(home string) []string {
	var out []string
	if filepath.IsAbs(home) {
		for _, p := range ToolchainPaths {
			out = append(out, filepath.Join(home, p))
		}
	}
	for _, name := range ToolchainEnv {
		for _, p := range filepath.SplitList(os.Getenv(name)) {
			if filepath.IsAbs(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// LandlockHide is DefaultHide for a confinement without namespaces,
// where Landlock keeps the list unreadable: without the socket
// directories (SocketDirs, XDG_RUNTIME_DIR), since Landlock below ABI 9
// does not govern connecting to a socket anyway, and /run holds what the
// host's network needs (/etc/resolv.conf often leads there).
func LandlockHide(home string) []string {
	skip := map[string]bool{}
	for _, d := range SocketDirs {
		skip[d] = true
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		skip[d] = true
	}
	for _, p := range SocketsNamedByEnv() {
		skip[p] = true
	}
	var out []string
	for _, p := range DefaultHide(home) {
		if !skip[p] {
			out = append(out, p)
		}
	}
	return out
}

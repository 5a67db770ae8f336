package confine

import (
	"os"
	"path/filepath"
)

// CredentialPaths are the paths below the user's home that every
// confined invocation finds empty: keys and logins of ssh, the clouds,
// GitHub's CLI, netrc, Docker, npm, GnuPG, and muster's own config
// (the fleet's credentials).
var CredentialPaths = []string{".ssh", ".aws", ".config/gh", ".netrc", ".docker", ".npmrc", ".gnupg", ".config/muster"}

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
	if os.Geteuid() == 0 {
		out = append(out, RootOnly...)
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

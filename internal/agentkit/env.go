package agentkit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
	"github.com/muster-run/muster/internal/proc"
	"github.com/muster-run/muster/internal/redact"
)

// CacheBin is where an npm install --prefix .cache/agents (muster's own
// scripts/install-agents.sh does one) puts the agent CLIs, relative to the
// repository root.
const CacheBin = ".cache/agents/node_modules/.bin"

// FindBinary resolves the program of a kind: spec.Command[0] when set (a
// path, or a name looked up on PATH), else name on PATH, else name under
// CacheBin in start or any of its parents (the worktree first, then the
// current directory).
func FindBinary(spec *muster.ExecutorSpec, name string, starts ...string) (string, error) {
	if spec != nil && len(spec.Command) > 0 && spec.Command[0] != "" {
		p, err := exec.LookPath(spec.Command[0])
		if err != nil {
			return "", fmt.Errorf("executor %s: command %q: %w", spec.Name, spec.Command[0], err)
		}
		return filepath.Abs(p)
	}
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, s := range starts {
		if s == "" {
			continue
		}
		dir, err := filepath.Abs(s)
		if err != nil {
			continue
		}
		for {
			p := filepath.Join(dir, CacheBin, name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("%s not found on PATH or in %s%s", name, CacheBin, installHint(name))
}

// installHint says how to install the program name, when it is a known
// agent CLI: the npm package, for every project (globally, or under the
// user's own prefix), never into the project's tree.
func installHint(name string) string {
	for _, k := range Kinds {
		if k.Binary == name && k.Package != "" {
			return fmt.Sprintf(" (install it for your user: npm install -g %s, or without root npm install -g --prefix ~/.local %s with ~/.local/bin on PATH)", k.Package, k.Package)
		}
	}
	return ""
}

var unsafeSlot = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]+`) })

// Home returns the invocation's home: req.Home, which the driver made
// (internal/exchange: a coder's is its attempt's, reused by its later
// rounds so that a fix round resumes its session; every other
// invocation's is fresh). Without one (a caller that made no exchange
// directory) it is a stable place per executor clone, created:
// <parent of Scratch>/agent-homes/<executor>-<clone>, or under the
// user's cache directory without a scratch directory.
func Home(req *muster.ExecRequest) (string, error) {
	if req.Home != "" {
		return req.Home, nil // muster's, made fresh for this invocation or its coder's attempt
	}
	name := "agent"
	if req.Spec != nil {
		name = req.Spec.Name
	}
	slot := unsafeSlot().ReplaceAllString(fmt.Sprintf("%s-%d", name, req.Clone), "_")
	var base string
	if req.Scratch != "" {
		base = filepath.Join(filepath.Dir(filepath.Clean(req.Scratch)), "agent-homes")
	} else {
		c, err := os.UserCacheDir()
		if err != nil {
			c = os.TempDir()
		}
		base = filepath.Join(c, "muster", "agent-homes")
	}
	home := filepath.Join(base, slot)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", fmt.Errorf("agent home: %w", err)
	}
	return home, nil
}

// APIKey returns the name and value of the variable holding the agent's key
// (see KeyName). The value is empty when the variable is unset.
func APIKey(spec *muster.ExecutorSpec, kind *Kind) (name, value string) {
	name = KeyName(spec, kind)
	return name, os.Getenv(name)
}

// providerKeys are the variables opencode's built-in providers read.
var providerKeys = map[string]string{
	"anthropic": "ANTHROPIC_API_KEY",
	"openai":    "OPENAI_API_KEY",
	"google":    "GOOGLE_GENERATIVE_AI_API_KEY",
}

// KeyName returns the variable holding the agent's key: spec.APIKeyEnv when
// configured, else the kind's own variable (for opencode, the one of the
// model's provider).
func KeyName(spec *muster.ExecutorSpec, kind *Kind) string {
	if spec != nil && spec.APIKeyEnv != "" {
		return spec.APIKeyEnv
	}
	if spec != nil && kind.Name == muster.ExecOpencode {
		if p, _, ok := strings.Cut(spec.Model, "/"); ok && providerKeys[p] != "" {
			return providerKeys[p]
		}
	}
	return kind.KeyEnv
}

// vendorPrefixes are variables of the user's environment that would point
// an agent elsewhere or change its behaviour; they are dropped so that only
// the executor's configuration decides (its env table may set them again).
var vendorPrefixes = []string{"ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "OPENCODE_", "XDG_"}

// Environ builds an agent's environment: muster's own, scrubbed of
// credentials (proc.Environ) and of other agents' settings, then set (in
// this order, later wins): HOME=home, the kind's variables, the
// executor's env table and the request's Env.
func Environ(home string, kindVars map[string]string, req *muster.ExecRequest) []string {
	// PWD is set because some CLIs (Bun-built ones) take it over the
	// process's real working directory.
	set := map[string]string{"HOME": home}
	if req.Dir != "" {
		set["PWD"] = req.Dir
	}
	for k, v := range kindVars {
		set[k] = v
	}
	for k, v := range EndpointVars(req.Endpoint) {
		set[k] = v
	}
	if req.Spec != nil {
		for k, v := range req.Spec.Env {
			set[k] = v
		}
	}
	for k, v := range req.Env {
		set[k] = v
	}
	var allow []string
	if req.Spec != nil {
		allow = req.Spec.EnvAllow
	}
	var out []string
	for _, kv := range proc.Environ(allow...) {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; ok || hasVendorPrefix(name) {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+set[k])
	}
	return out
}

// EndpointVars are the variables that point an invocation's tools at
// muster's proxy (HTTPS_PROXY, HTTP_PROXY, their lower-case forms) with
// its own loopback left out (NO_PROXY), so its own test servers are
// reached directly; none without an endpoint.
func EndpointVars(ep *muster.ModelEndpoint) map[string]string {
	if ep == nil || ep.Proxy == "" {
		return nil
	}
	const local = "localhost,127.0.0.1,::1"
	return map[string]string{
		"HTTPS_PROXY": ep.Proxy, "HTTP_PROXY": ep.Proxy, "https_proxy": ep.Proxy, "http_proxy": ep.Proxy,
		"ALL_PROXY": ep.Proxy, "NO_PROXY": local, "no_proxy": local,
	}
}

func hasVendorPrefix(name string) bool {
	u := strings.ToUpper(name)
	for _, p := range vendorPrefixes {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

// SeedLogin copies the logged-in user's credential files of a kind into
// home (each only when missing there), so a clone with its own home can
// use a subscription login. It does nothing when the user has no login.
//
// Who gets a login (docs/agents.md, "Subscription logins"): Prepare
// seeds it only into the home of an invocation of an executor of that
// kind that has no API key (the login is then its only credential): the
// coder's attempt home (kept for that coder's later rounds only), and a
// reviewer's or planner's fresh home when that executor is itself the
// reviewer or planner. No invocation of another kind or executor, no
// gate, setup step, code step or command executor ever gets one. The
// copy is the invocation's own: the user's file is hidden in the
// sandbox and nothing is copied back.
func SeedLogin(kind *Kind, home string) error {
	user, err := os.UserHomeDir()
	if err != nil || user == "" || filepath.Clean(user) == filepath.Clean(home) {
		return nil
	}
	for _, rel := range kind.LoginFiles {
		src := filepath.Join(user, rel)
		if kind.Name == muster.ExecCodex && os.Getenv("CODEX_HOME") != "" {
			src = filepath.Join(os.Getenv("CODEX_HOME"), filepath.Base(rel))
		}
		if exchange.Stat(home, rel) >= 0 {
			continue
		}
		if err := exchange.CopyFile(home, rel, src, maxLogin, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("seed login %s: %w", rel, err)
		}
	}
	return nil
}

// SeedConfig copies the user's own instruction files of a kind
// (Kind.ConfigFiles: CLAUDE.md, AGENTS.md, GEMINI.md) into home,
// read-only (0444), each only when missing there: the home is the
// invocation's own (a coder's is its attempt's), so no other invocation
// reads what this one could change. A file the user does not have, or
// that cannot be copied (not a regular file, over 1 MB), is left out:
// instructions are not worth failing an invocation for.
func SeedConfig(kind *Kind, home string) {
	user, err := os.UserHomeDir()
	if err != nil || user == "" || filepath.Clean(user) == filepath.Clean(home) {
		return
	}
	for _, rel := range kind.ConfigFiles {
		if exchange.Stat(home, rel) >= 0 {
			continue
		}
		// The user's own file, which no agent can write: a dotfiles
		// manager's link in it is followed, once, here.
		src, err := filepath.EvalSymlinks(filepath.Join(user, rel))
		if err != nil {
			continue
		}
		_ = exchange.CopyFile(home, rel, src, maxLogin, 0o444)
	}
}

// HasLogin reports whether the user has a login file of the kind.
func HasLogin(kind *Kind) bool {
	user, err := os.UserHomeDir()
	if err != nil {
		return false
	}
	for _, rel := range kind.LoginFiles {
		if _, err := os.Stat(filepath.Join(user, rel)); err == nil {
			return true
		}
	}
	return false
}

// LoginHolders names the executors of cfg that run on the user's
// subscription login (a kind with login files, no API key in the
// environment, and a login file present): their token is copied into
// the homes of their invocations, inside the sandbox, where muster's
// endpoint cannot keep it from the agent. hasLogin nil: HasLogin.
func LoginHolders(cfg *muster.Config, getenv func(string) string, hasLogin func(*Kind) bool) []string {
	if hasLogin == nil {
		hasLogin = HasLogin
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	var out []string
	for _, e := range cfg.Executors {
		kind := Lookup(e.Kind)
		if kind == nil || len(kind.LoginFiles) == 0 || getenv(KeyName(e, kind)) != "" {
			continue
		}
		if hasLogin(kind) {
			out = append(out, e.Name)
		}
	}
	return out
}

// LoginWarning says that the executors named hold the user's login token
// inside the sandbox ("" when none does).
func LoginWarning(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("executor(s) %s run on your subscription login: its token is copied into the home of each of their invocations "+
		"(never another executor's, a gate's or a setup step's), where the agent and any tool it runs can read it; "+
		"with an API key instead, the key stays with muster's model endpoint", strings.Join(names, ", "))
}

// maxLogin bounds a login file seeded into a home.
const maxLogin = 1 << 20

// WriteFile writes data to rel under home (0600), creating its
// directories, through internal/exchange: home is a directory the agent
// writes too (a coder's, reused across its rounds), so a link it planted
// at rel or on the way is replaced or refused, never followed.
func WriteFile(home, rel string, data []byte) error {
	return exchange.WriteFile(home, rel, data, 0o600)
}

// Secrets returns the values to redact from what an agent reports: its
// key, the secrets of the executor's env table and the request's Env
// (redact.Values), and those of muster's own environment.
func Secrets(req *muster.ExecRequest, key string) []string {
	var allow []string
	if req.Spec != nil {
		allow = req.Spec.EnvAllow
	}
	out := append([]string{key}, redact.Environ(os.Environ(), allow...)...)
	add := func(env map[string]string) {
		for k, v := range env {
			out = append(out, redact.Values(k, v)...)
		}
	}
	if req.Spec != nil {
		add(req.Spec.Env)
	}
	add(req.Env)
	return out
}

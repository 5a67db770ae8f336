// Package doctor checks which agents muster can drive on this machine: for
// each configured executor and each known agent kind, whether its program
// is found, its version, whether credentials are present (never their
// values), and how each authority is enforced.
package doctor

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/acp"
	"github.com/muster-run/muster/internal/agentkit"
	"github.com/muster-run/muster/internal/proc"
)

// Credential states. The value of a credential is never reported.
const (
	CredSet      = "set"     // the key variable is set
	CredLogin    = "login"   // no key, but the CLI's login file exists
	CredMissing  = "missing" // neither
	CredNotNeed  = "not needed"
	CredNotKnown = "-"
)

// Authority is how one authority is applied by a kind.
type Authority struct {
	Authority muster.Authority `json:"authority"`
	Level     string           `json:"level"` // enforced, advisory, or none
	How       string           `json:"how"`
}

// Result is what the doctor found about one executor or kind.
type Result struct {
	// Executor is the configured executor's name; "" for a known kind
	// that no executor uses.
	Executor string          `json:"executor,omitempty"`
	Kind     muster.ExecKind `json:"kind"`
	// Binary is the program's path; "" when not found or not needed.
	Binary string `json:"binary,omitempty"`
	Found  bool   `json:"found"`
	// Version is the first line of `PROGRAM --version`.
	Version string `json:"version,omitempty"`
	// CredentialVar names the variable checked; Credentials is its state.
	CredentialVar string      `json:"credential_var,omitempty"`
	Credentials   string      `json:"credentials"`
	Authority     []Authority `json:"authority,omitempty"`
	// Problems say why the executor cannot run; empty when it can.
	Problems []string `json:"problems,omitempty"`
	// Warnings are worth knowing but do not stop a run.
	Warnings []string `json:"warnings,omitempty"`
}

// OK reports whether the executor can run.
func (r *Result) OK() bool { return len(r.Problems) == 0 }

// Options tune Check; the zero value uses the real environment.
type Options struct {
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
	// HasLogin reports whether a kind's login file exists (nil: look in
	// the user's home).
	HasLogin func(kind *agentkit.Kind) bool
	// VersionTimeout bounds each --version call (0: 30s).
	VersionTimeout time.Duration
	// OnlyConfigured leaves out the known kinds no executor uses.
	OnlyConfigured bool
	// Dir is the repository's top, where a relative command program
	// ("./agent.sh": a path with a slash) is looked for, as each task's
	// worktree, a clone of it, runs it ("": the current directory).
	Dir string
}

// Check examines every executor of cfg (nil: none), then every known
// agent CLI kind no executor uses. Version probes run in parallel.
func Check(ctx context.Context, cfg *muster.Config, opts Options) []Result {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.HasLogin == nil {
		opts.HasLogin = agentkit.HasLogin
	}
	if opts.VersionTimeout == 0 {
		opts.VersionTimeout = 30 * time.Second
	}
	var specs []*muster.ExecutorSpec
	used := map[muster.ExecKind]bool{}
	if cfg != nil {
		for _, s := range cfg.Executors {
			specs = append(specs, s)
			used[s.Kind] = true
		}
	}
	n := len(specs)
	// The repository's .cache/agents is found from the config file's
	// directory, besides the current directory.
	var starts []string
	if cfg != nil && cfg.Source != "" {
		starts = append(starts, filepath.Dir(cfg.Source))
	}
	for _, k := range agentkit.Kinds {
		if !used[k.Name] && k.Binary != "" && !opts.OnlyConfigured {
			specs = append(specs, &muster.ExecutorSpec{Kind: k.Name})
		}
	}
	out := make([]Result, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		// Each probe goroutine ends when its --version call does.
		go func() {
			defer wg.Done()
			out[i] = check(ctx, s, i < n, opts, starts)
		}()
	}
	wg.Wait()
	return out
}

func check(ctx context.Context, spec *muster.ExecutorSpec, configured bool, opts Options, starts []string) Result {
	r := Result{Kind: spec.Kind, Credentials: CredNotKnown}
	if configured {
		r.Executor = spec.Name
	}
	if kind := agentkit.Lookup(spec.Kind); kind != nil {
		checkCLI(ctx, spec, kind, &r, opts, starts)
		return r
	}
	info := muster.LookupKind(spec.Kind)
	if info == nil {
		r.Problems = append(r.Problems, fmt.Sprintf("unknown kind %q", spec.Kind))
		return r
	}
	switch info.Family {
	case muster.FamilyCommand:
		checkCommand(spec, &r, opts.Dir)
	case muster.FamilyHTTP:
		checkHTTP(spec, info, &r, opts)
	case muster.FamilySim:
		r.Found = true
		r.Credentials = CredNotNeed
	default:
		r.Problems = append(r.Problems, fmt.Sprintf("kind %q has no doctor check for its family %s", spec.Kind, info.Family))
	}
	return r
}

// checkCommand: a command kind's program is found; its credentials are
// its own business.
func checkCommand(spec *muster.ExecutorSpec, r *Result, dir string) {
	r.Authority = []Authority{{Authority: "all", Level: "none", How: "muster's scrubbed environment only; the program decides"}}
	if len(spec.Command) == 0 {
		r.Problems = append(r.Problems, "no command configured")
		return
	}
	prog := spec.Command[0]
	if dir != "" && strings.Contains(prog, "/") && !filepath.IsAbs(prog) {
		prog = filepath.Join(dir, prog)
	}
	p, err := exec.LookPath(prog)
	if err != nil {
		r.Problems = append(r.Problems, fmt.Sprintf("command %q not found", spec.Command[0]))
		return
	}
	r.Binary, r.Found = p, true
}

// checkHTTP: an HTTP kind has its key (api_key_env, else the kind's
// registry variable), or talks to a model on this machine.
func checkHTTP(spec *muster.ExecutorSpec, info *muster.KindInfo, r *Result, opts Options) {
	r.Found = true
	r.Authority = []Authority{{Authority: "all", Level: agentkit.Enforced, How: "muster's own tool loop, confined to the worktree; shell only with shell authority"}}
	name := spec.APIKeyEnv
	if name == "" {
		name = info.KeyEnv
	}
	r.CredentialVar = name
	switch {
	case opts.Getenv(name) != "":
		r.Credentials = CredSet
	case loopback(spec.BaseURL):
		r.Credentials = CredNotNeed
	default:
		r.Credentials = CredMissing
		r.Problems = append(r.Problems, fmt.Sprintf("%s is not set", name))
	}
}

func checkCLI(ctx context.Context, spec *muster.ExecutorSpec, kind *agentkit.Kind, r *Result, opts Options, starts []string) {
	for _, a := range []muster.Authority{muster.AuthorityRead, muster.AuthorityWrite, muster.AuthorityShell} {
		g := kind.Authority[a]
		r.Authority = append(r.Authority, Authority{Authority: a, Level: g.Level, How: g.How})
	}
	bin, err := agentkit.FindBinary(spec, kind.Binary, starts...)
	if kind.Binary == "" && len(spec.Command) == 0 {
		err = fmt.Errorf("no command configured")
	}
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
	} else {
		r.Binary, r.Found = bin, true
		var v string
		if kind.ACP {
			v, err = handshake(ctx, spec, bin, opts.VersionTimeout)
		} else if v, err = version(ctx, bin, kind.VersionArgs, opts.VersionTimeout); err != nil {
			err = fmt.Errorf("%s %s: %w", filepath.Base(bin), strings.Join(kind.VersionArgs, " "), err)
		}
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
		r.Version = v
	}
	if kind.Note != "" {
		r.Warnings = append(r.Warnings, kind.Note)
	}
	if kind.Name == muster.ExecACP {
		// A generic ACP agent's credentials are its own business.
		r.Credentials = CredNotKnown
		if spec.APIKeyEnv != "" {
			r.CredentialVar = spec.APIKeyEnv
			r.Credentials = CredMissing
			if opts.Getenv(spec.APIKeyEnv) != "" {
				r.Credentials = CredSet
			} else {
				r.Problems = append(r.Problems, fmt.Sprintf("api_key_env %s is not set", spec.APIKeyEnv))
			}
		}
		return
	}
	name := agentkit.KeyName(spec, kind)
	r.CredentialVar = name
	switch {
	case opts.Getenv(name) != "":
		r.Credentials = CredSet
	case spec.APIKeyEnv != "":
		r.Credentials = CredMissing
		r.Problems = append(r.Problems, fmt.Sprintf("api_key_env %s is not set", name))
	case opts.HasLogin(kind):
		r.Credentials = CredLogin
		r.Warnings = append(r.Warnings, "runs on your subscription login: its token is copied into the home of each of its invocations, "+
			"inside the sandbox, where the agent and its tools can read it (an API key would stay with muster's endpoint)")
	default:
		r.Credentials = CredMissing
		r.Problems = append(r.Problems, fmt.Sprintf("no credentials: set %s (or api_key_env) or log in with %s", name, kind.Binary))
	}
	for _, a := range r.Authority {
		if a.Level == agentkit.Advisory {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s authority is advisory for %s", a.Authority, kind.Name))
		}
	}
}

// handshake asks an ACP agent its name and version with initialize, in a
// scrubbed environment and a throwaway home.
func handshake(ctx context.Context, spec *muster.ExecutorSpec, bin string, timeout time.Duration) (string, error) {
	home, err := os.MkdirTemp("", "muster-doctor-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	argv := []string{bin}
	if spec.Kind == muster.ExecACP && len(spec.Command) > 1 {
		argv = append(argv, spec.Command[1:]...)
	}
	argv = append(argv, agentkit.Lookup(spec.Kind).ACPArgs...)
	env := append(proc.Environ(), "NO_COLOR=1", "HOME="+home)
	res, err := acp.Handshake(ctx, argv, home, env, timeout)
	if err != nil {
		return "", fmt.Errorf("%s: ACP handshake: %w", filepath.Base(bin), err)
	}
	if res.AgentInfo == nil {
		return fmt.Sprintf("ACP v%d", res.ProtocolVersion), nil
	}
	return agentkit.Clip(strings.TrimSpace(res.AgentInfo.Version+" ("+res.AgentInfo.Name+", ACP v"+fmt.Sprint(res.ProtocolVersion)+")"), 80), nil
}

// version runs the program's version command in a scrubbed environment.
func version(ctx context.Context, bin string, args []string, timeout time.Duration) (string, error) {
	var lines []string
	var mu sync.Mutex
	res, err := proc.Run(ctx, proc.Spec{
		Argv:    append([]string{bin}, args...),
		Env:     append(proc.Environ(), "NO_COLOR=1"),
		Timeout: timeout,
		Grace:   time.Second,
		OnLine: func(l string) {
			mu.Lock()
			defer mu.Unlock()
			if strings.TrimSpace(l) != "" {
				lines = append(lines, strings.TrimSpace(l))
			}
		},
	})
	if err != nil {
		return "", err
	}
	if res.Stopped != "" {
		return "", fmt.Errorf("stopped (%s)", res.Stopped)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("exit status %d", res.ExitCode)
	}
	if len(lines) == 0 {
		return "", fmt.Errorf("printed no version")
	}
	return agentkit.Clip(lines[0], 80), nil
}

func loopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}

// Failed returns the configured executors that cannot run, sorted.
func Failed(results []Result) []string {
	var out []string
	for _, r := range results {
		if r.Executor != "" && !r.OK() {
			out = append(out, r.Executor)
		}
	}
	sort.Strings(out)
	return out
}

package preflight

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/proc"
)

// Confinement returns how a run confines its agents and gates, by
// [run] confine. It is nil when they run unconfined: confine = "off", or
// "auto" on a system that cannot confine (warnings then says so, once).
// confine = "required" on such a system is an environment error (exit
// 3). protect are the paths agents must never be able to write (the
// user's repository, its git directory): a shared temporary directory
// that holds one is not made writable (agents keep their own TMPDIR),
// and a configured writable path that holds one is bad input (exit 2).
func Confinement(cfg *muster.Config, protect ...string) (c *muster.Confinement, warnings []string, err error) {
	if cfg.Run.Confine == muster.ConfineOff {
		return nil, nil, nil
	}
	if err := checkWritable(cfg, protect); err != nil {
		return nil, nil, err
	}
	st := confine.Probe()
	exe, err := os.Executable()
	if err != nil && st.Available() {
		st = confine.Status{Reason: fmt.Sprintf("cannot find muster's own executable: %v", err)}
	}
	if !st.Available() {
		if cfg.Run.Confine == muster.ConfineRequired {
			return nil, nil, cmdutil.Env(`[run] confine = "required", but this system cannot confine agents: %s`, st.Reason)
		}
		return nil, []string{UnconfinedWarning(st)}, nil
	}
	// The small launcher installed beside muster starts each sandbox
	// sooner than a re-exec of muster itself (confine.Launcher).
	launcher, lw := confine.Launcher(exe)
	if lw != "" {
		warnings = append(warnings, lw)
	}
	c = &muster.Confinement{Launcher: launcher, Writable: append([]string(nil), cfg.Run.Writable...)}
	if reason := confine.ProbeNamespaces(launcher); reason == "" {
		// Each invocation gets its own /tmp and /dev/shm, sees no
		// socket or credential of the user's, and keeps the host's
		// network until the network policy says otherwise (egress,
		// ARCHITECTURE §8.5).
		c.Namespaces = true
		c.HostNetwork = true
		home, _ := os.UserHomeDir()
		c.Hide = append(confine.DefaultHide(home), cfg.Run.Hide...)
		// Toolchains and package caches stay readable where a cover
		// would hide them (/root, as root); read-only (ARCHITECTURE
		// §8.5: setup steps list them as writable).
		c.ReadOnly = append(c.ReadOnly, confine.Toolchains(home)...)
	} else {
		if cfg.Run.Confine == muster.ConfineRequired {
			return nil, nil, cmdutil.Env(`[run] confine = "required", but this system cannot build the sandbox's namespaces: %s`, reason)
		}
		// Landlock alone keeps the hide list unreadable (it grants
		// reading beside a hidden path, never below it), and the
		// toolchains below one readable. Not the socket directories:
		// Landlock cannot stop a connect there, and the host's network
		// needs /run.
		home, _ := os.UserHomeDir()
		c.Hide = append(confine.LandlockHide(home), cfg.Run.Hide...)
		c.ReadOnly = append(c.ReadOnly, confine.Toolchains(home)...)
		var held []string
		for _, shared := range confine.Shared {
			if p := holds(shared, protect); p != "" {
				held = append(held, fmt.Sprintf("%s is not writable to them, since it holds %s: they write their own TMPDIR", shared, p))
				continue
			}
			c.Writable = append(c.Writable, shared)
		}
		warnings = append(warnings, NamespacesWarning(reason, st.ABI, held...))
	}
	if w := RootWarning(); w != "" {
		warnings = append(warnings, w)
	}
	w, err := limits(c, cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, append(warnings, w...), nil
}

// limits sets [run] max_pids and max_memory on c where a cgroup can
// enforce them (ARCHITECTURE §8.1). Where none can, "required" is an
// environment error (exit 3) and "auto" runs without them, saying so.
func limits(c *muster.Confinement, cfg *muster.Config) ([]string, error) {
	pids, mem := cfg.Run.MaxPids, cfg.Run.MaxMemory
	if pids == 0 && mem == 0 {
		return nil, nil
	}
	if ok, why := proc.ProbeCgroups().Can(pids, mem); !ok {
		if cfg.Run.Confine == muster.ConfineRequired {
			return nil, cmdutil.Env(`[run] confine = "required" with max_pids or max_memory set, but %s`, why)
		}
		return []string{LimitsWarning(why)}, nil
	}
	c.MaxPids, c.MaxMemory = pids, mem
	return nil, nil
}

// LimitsWarning says that [run] max_pids or max_memory are not enforced
// here, and why.
func LimitsWarning(why string) string {
	return "agents and gates run without their [run] max_pids/max_memory limits: " + why +
		`; [run] confine = "required" refuses to run here`
}

// NamespacesWarning says, once and worded as doctor's namespaces line,
// that agents run without the sandbox's namespaces (Landlock and the
// capability drop only), why, and what that leaves open. held says which
// shared directory (/tmp) they may not write after all, where it holds
// the user's repository or muster's clones; /tmp is called shared only
// where it is.
func NamespacesWarning(reason string, abi int, held ...string) string {
	open := []string{"/tmp is shared", "your sockets are reachable"}
	if abi < 6 {
		// Landlock scopes signals from ABI 6 (Linux 6.12): below, an agent
		// can kill __confine, the subreaper of what it started.
		open = append(open, fmt.Sprintf("on this kernel (Landlock ABI %d, below 6) an agent can kill the process that ends what it leaves behind, which [run] max_pids or max_memory (a cgroup per invocation) then ends", abi))
	}
	if len(held) > 0 {
		open = append(held, open[1:]...)
	}
	return "namespaces: unavailable: " + reason + "; agents and gates run with Landlock and the capability drop only (" +
		strings.Join(open, "; ") + `); [run] confine = "required" refuses to run here`
}

// RootWarning says, when muster runs as root, what that costs ("" when
// it does not).
func RootWarning() string {
	if os.Geteuid() != 0 {
		return ""
	}
	return "muster runs as root: its agents run as uid 0 without capabilities, which still reads and writes what root owns " +
		"wherever the sandbox shows it (/root and /etc/shadow are hidden); run muster as an unprivileged user"
}

// RepoConfinement is Confinement for agents working on repo: they must
// never write the user's repository, muster's run directory in it, or
// the pool of other clones in the cache.
func RepoConfinement(repo *cmdutil.Repo, cfg *muster.Config) (*muster.Confinement, []string, error) {
	protect := []string{repo.Top, repo.GitDir}
	cache, err := git.CacheRoot()
	if err == nil {
		protect = append(protect, cache)
	}
	// Nothing muster keeps may be writable from inside either: the git
	// directory (hooks, config, the run directory) and the cache (every
	// clone and its private git directory).
	inside := []string{repo.GitDir}
	if cache != "" {
		inside = append(inside, cache)
	}
	if cfg.Run.Confine != muster.ConfineOff {
		if err := checkWritableIn(cfg, inside); err != nil {
			return nil, nil, err
		}
	}
	c, warnings, err := Confinement(cfg, protect...)
	if c != nil {
		// The user's repository (where the clones' objects are) is seen
		// read-only wherever it lies; the other clones in the cache are
		// not seen at all (an invocation's own clone is bound back).
		c = c.WithReadOnly(repo.Top, repo.GitDir)
		// Its config is not: it holds what git authenticates with (a
		// token in a remote's URL, actions/checkout's extraheader), and
		// no clone reads it (each has a git directory of its own).
		c.Hide = append(c.Hide, filepath.Join(repo.GitDir, "config"))
		if cache != "" {
			c.Hide = append(c.Hide, cache)
		}
	}
	return c, warnings, err
}

// UnconfinedWarning says that agents run unconfined, why, and what to do.
func UnconfinedWarning(st confine.Status) string {
	return fmt.Sprintf(`agents and gates run unconfined (they can write anywhere you can): %s; `+
		`[run] confine = "required" refuses to run here, "off" silences this`, st.Reason)
}

// checkWritable rejects a configured writable path that holds a
// protected one: agents could then write the user's repository.
func checkWritable(cfg *muster.Config, protect []string) error {
	return eachWritable(cfg, func(w string) string {
		if p := holds(w, protect); p != "" {
			return fmt.Sprintf("%q holds %s, which agents must not write: list narrower paths", w, p)
		}
		return ""
	})
}

// checkWritableIn rejects a configured writable path that lies in one of
// dirs (muster's git directory and cache), symlinks resolved.
func checkWritableIn(cfg *muster.Config, dirs []string) error {
	return eachWritable(cfg, func(w string) string {
		for _, d := range dirs {
			if d != "" && holds(d, []string{w}) != "" {
				return fmt.Sprintf("%q lies in %s, which agents must not write: list a path outside it", w, d)
			}
		}
		return ""
	})
}

// eachWritable applies bad to every configured writable path ([run],
// then each executor's) and returns the first refusal as bad input
// naming the config file and the table.
func eachWritable(cfg *muster.Config, bad func(w string) string) error {
	src := cfg.Source
	if src == "" {
		src = "config"
	}
	check := func(where string, paths []string) error {
		for _, w := range paths {
			if why := bad(w); why != "" {
				return &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("%s: %s writable: %s", src, where, why)}
			}
		}
		return nil
	}
	if err := check("[run]", cfg.Run.Writable); err != nil {
		return err
	}
	for _, e := range cfg.Executors {
		if err := check("[executors."+e.Name+"]", e.Writable); err != nil {
			return err
		}
	}
	return nil
}

// holds returns the first of paths that lies in dir (or is dir), or "".
func holds(dir string, paths []string) string {
	d := resolved(dir)
	for _, p := range paths {
		if p == "" {
			continue
		}
		rel, err := filepath.Rel(d, resolved(p))
		if err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return p
		}
	}
	return ""
}

// resolved returns p with the symlinks of its nearest existing ancestor
// resolved (a path that does not exist yet lies where its parent leads,
// and a dangling link where it points).
func resolved(p string) string {
	return resolvedN(p, 0)
}

func resolvedN(p string, depth int) string {
	p = filepath.Clean(p)
	var rest []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if t, err := os.Readlink(p); err == nil && depth < 40 {
			if !filepath.IsAbs(t) {
				t = filepath.Join(filepath.Dir(p), t)
			}
			return filepath.Join(append([]string{resolvedN(t, depth+1)}, rest...)...)
		}
		up := filepath.Dir(p)
		if up == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = up
	}
}

// DefaultGuard is the guard of a run whose config does not set one. Agents
// the kernel confines cannot write the user's repository, so a change there
// during a run is the user's own work (a commit on their branch, a hook
// they add): it is neither undone nor charged to a task. Unconfined agents
// could have made it: it is undone and fails the attempt.
func DefaultGuard(c *muster.Confinement) muster.GuardPolicy {
	if c != nil {
		return muster.GuardOff
	}
	return muster.GuardRestore
}

// SetupCaches are the package caches of the [setup] tables (what their
// tools install from), made when missing, for the setup steps' writable
// paths: a confined step may write only paths that exist. A run and a
// fleet worker confine their setup steps with them alike.
func SetupCaches(cfg *muster.Config) []string {
	home, _ := os.UserHomeDir()
	var out []string
	for _, p := range cfg.SetupCaches(home) {
		if os.MkdirAll(p, 0o755) == nil {
			out = append(out, p)
		}
	}
	return out
}

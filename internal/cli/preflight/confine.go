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
	writable := append([]string(nil), cfg.Run.Writable...)
	for _, shared := range confine.Shared {
		if p := holds(shared, protect); p != "" {
			warnings = append(warnings, fmt.Sprintf("%s holds %s: confined agents and gates may not write %s, only their own TMPDIR", shared, p, shared))
			continue
		}
		writable = append(writable, shared)
	}
	return &muster.Confinement{Launcher: exe, Writable: writable}, warnings, nil
}

// RepoConfinement is Confinement for agents working on repo: they must
// never write the user's repository, muster's run directory in it, or
// the pool of other clones in the cache.
func RepoConfinement(repo *cmdutil.Repo, cfg *muster.Config) (*muster.Confinement, []string, error) {
	protect := []string{repo.Top, repo.GitDir}
	if cache, err := git.CacheRoot(); err == nil {
		protect = append(protect, cache)
	}
	return Confinement(cfg, protect...)
}

// UnconfinedWarning says that agents run unconfined, why, and what to do.
func UnconfinedWarning(st confine.Status) string {
	return fmt.Sprintf(`agents and gates run unconfined (they can write anywhere you can): %s; `+
		`[run] confine = "required" refuses to run here, "off" silences this`, st.Reason)
}

// checkWritable rejects a configured writable path that holds a
// protected one: agents could then write the user's repository.
func checkWritable(cfg *muster.Config, protect []string) error {
	check := func(where string, paths []string) error {
		for _, w := range paths {
			if p := holds(w, protect); p != "" {
				src := cfg.Source
				if src == "" {
					src = "config"
				}
				return &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf(
					"%s: %s writable: %q holds %s, which agents must not write: list narrower paths", src, where, w, p)}
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

func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// DefaultGuard is the guard of a run whose config does not set one. Agents
// the kernel confines cannot write the user's repository, so a change there
// during a run is the user's own work (a commit on their branch, a hook
// they add): it is neither undone nor charged to a task. Unconfined agents
// could have made it: it is undone and fails the attempt.
func DefaultGuard(c *muster.Confinement) string {
	if c != nil {
		return muster.GuardOff
	}
	return muster.GuardRestore
}

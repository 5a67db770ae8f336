package git

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// nothingIgnored reports whether `git check-ignore` would find none of
// paths ignored, answered without a git process in the plain case where
// no ignore rule can apply to them: no excludes file (core.excludesFile
// not carried, git's default one, $XDG_CONFIG_HOME/git/ignore or
// $HOME/.config/git/ignore, absent), an info/exclude without a pattern,
// and no .gitignore, of any kind, in the clone at dir in any directory
// above a path (the caller has checked those directories are no links).
// Any doubt is false: the caller asks git.
func (w *Workspace) nothingIgnored(dir string, paths []string) bool {
	if w.carriesExcludesFile() || !noPatterns(w.excludes) || !noExcludesFile(baseEnv()) {
		return false
	}
	return noneAbove(dir, paths, ".gitignore")
}

// noneAbove reports whether no directory above any of paths in the
// worktree dir, its top included, holds a file (or anything) called name.
func noneAbove(dir string, paths []string, name string) bool {
	seen := map[string]bool{}
	for _, p := range paths {
		// A directory seen has had its own parents looked at too.
		for d := path.Dir(p); !seen[d]; d = path.Dir(d) {
			seen[d] = true
			if !absent(filepath.Join(dir, filepath.FromSlash(d), name)) {
				return false
			}
			if d == "." || d == "/" {
				break
			}
		}
	}
	return true
}

// absent reports whether nothing is at p (no link followed at its end).
func absent(p string) bool {
	if p == "" {
		return true
	}
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}

// carriesExcludesFile reports whether the user's config names an
// excludes file (carried into muster's calls).
func (w *Workspace) carriesExcludesFile() bool {
	for i := 1; i < len(w.carry); i += 2 {
		if k, _, _ := strings.Cut(w.carry[i], "="); strings.EqualFold(k, "core.excludesfile") {
			return true
		}
	}
	return false
}

// noPatterns reports whether an exclude file's content holds no pattern:
// every line empty or a comment.
func noPatterns(b []byte) bool {
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSuffix(l, "\r"); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// noExcludesFile reports whether git, in the environment env of its
// calls, has no default excludes file to read. A relative one (a
// relative XDG_CONFIG_HOME or HOME) git resolves against its working
// directory, the clone, which the agent writes: git is asked.
func noExcludesFile(env []string) bool {
	p := defaultExcludesFile(env)
	return p == "" || filepath.IsAbs(p) && absent(p)
}

// defaultExcludesFile is the excludes file git reads when
// core.excludesFile is not set, in the environment env of its calls
// (xdg_config_home("ignore")): "" when there is none.
func defaultExcludesFile(env []string) string {
	get := func(k string) (v string, set bool) {
		for _, kv := range env {
			if val, ok := strings.CutPrefix(kv, k+"="); ok {
				v, set = val, true // the last one counts, as for exec
			}
		}
		return v, set
	}
	if x, _ := get("XDG_CONFIG_HOME"); x != "" {
		return x + "/git/ignore"
	}
	if h, set := get("HOME"); set {
		return h + "/.config/git/ignore" // git's own join: an empty HOME is "/"
	}
	return ""
}

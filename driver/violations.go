package driver

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
)

// Kinds of violation, as a person reads them.
const (
	violReserved = "reserved files (muster's config and directories, which no task may change)"
	violLink     = "symlinks that point outside the worktree"
	violOutside  = "paths outside the repository"
	violOwns     = "changed paths outside Owns"
)

// explainViolations groups the paths the workspace refused by why: a
// reserved file, a symlink leaving the worktree, a path out of the
// repository, or (what is left) a path outside the task's Owns. It
// returns one clause per kind, in that order ("symlinks that point
// outside the worktree: src/passwd").
func explainViolations(dir string, viol []string) []string {
	groups := map[string][]string{}
	for _, p := range viol {
		k := violOwns
		switch {
		case reservedPath(p):
			k = violReserved
		case escapingLink(dir, p):
			k = violLink
		case !inRepo(p):
			k = violOutside
		}
		groups[k] = append(groups[k], p)
	}
	var out []string
	for _, k := range []string{violReserved, violLink, violOutside, violOwns} {
		if ps := groups[k]; len(ps) > 0 {
			out = append(out, k+": "+strings.Join(ps, ", "))
		}
	}
	return out
}

// reservedPath reports whether p is or lies in muster.ReservedPaths.
func reservedPath(p string) bool {
	for _, r := range muster.ReservedPaths {
		d := strings.TrimSuffix(r, "/")
		if p == r || p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

func inRepo(p string) bool {
	c := path.Clean(p)
	return p != "" && !strings.HasPrefix(p, "/") && c != ".." && !strings.HasPrefix(c, "../")
}

// escapingLink reports whether p in the worktree dir is a symlink whose
// target lies outside the worktree (or in .git).
func escapingLink(dir, p string) bool {
	full := filepath.Join(dir, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return false
	}
	t, err := os.Readlink(full)
	if err != nil {
		return true
	}
	t = filepath.ToSlash(t)
	if path.IsAbs(t) {
		return true
	}
	r := path.Clean(path.Join(path.Dir(p), t))
	return r == ".." || strings.HasPrefix(r, "../") || r == ".git" || strings.HasPrefix(r, ".git/")
}

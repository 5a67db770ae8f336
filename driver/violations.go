package driver

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/muster-run/muster"
)

// Kinds of violation, as a person reads them.
const (
	violReserved = "reserved files (muster's config and directories, the plan, the programs the config runs and git's files, which no task may change)"
	violSize     = "files larger than max_file_bytes"
	violGate     = "files a gate runs (a task changes one only when its Owns lists it by name)"
	violLink     = "symlinks that point outside the worktree"
	violOutside  = "paths outside the repository"
	violOwns     = "changed paths outside Owns"
)

// explainViolations groups the paths the workspace refused by why: a
// reserved file, a file over the size cap, a file a gate runs, a symlink
// leaving the worktree, a path out of the repository, or (what is left)
// a path outside the task's Owns. It returns one clause per kind, in
// that order ("symlinks that point outside the worktree: src/passwd").
func (w *worker) explainViolations(viol []string) []string {
	maxFile := w.cfg.Run.MaxFileBytes
	if maxFile <= 0 {
		maxFile = muster.DefaultMaxFileBytes
	}
	groups := map[string][]string{}
	for _, p := range viol {
		k := violOwns
		switch {
		case reservedPath(p, w.d.opts.Reserved):
			k = violReserved
		case oversize(w.dir, p, maxFile):
			k = violSize
		case slices.Contains(w.d.opts.GateFiles, p):
			k = violGate
		case escapingLink(w.dir, p):
			k = violLink
		case !inRepo(p):
			k = violOutside
		}
		groups[k] = append(groups[k], p)
	}
	var out []string
	for _, k := range []string{violReserved, violSize, violGate, violLink, violOutside, violOwns} {
		if ps := groups[k]; len(ps) > 0 {
			name := k
			if k == violSize {
				name = fmt.Sprintf("%s (%d bytes)", k, maxFile)
			}
			out = append(out, name+": "+strings.Join(ps, ", "))
		}
	}
	return out
}

// reservedPath reports whether p is or lies in muster.ReservedPaths or
// the run's own reserved paths, or has a .git component.
func reservedPath(p string, run []string) bool {
	for _, seg := range strings.Split(p, "/") {
		if strings.EqualFold(seg, ".git") {
			return true
		}
	}
	for _, r := range append(slices.Clone(muster.ReservedPaths), run...) {
		d := strings.TrimSuffix(r, "/")
		if p == r || p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// oversize reports whether p in the worktree dir is a regular file over
// the cap (by lstat: nothing reads it).
func oversize(dir, p string, limit int64) bool {
	if !inRepo(p) {
		return false
	}
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
	return err == nil && fi.Mode().IsRegular() && fi.Size() > limit
}

// gateFilesIn returns the files of gates the change touches.
func gateFilesIn(ch *muster.Change, gateFiles []string) []string {
	if ch == nil || len(gateFiles) == 0 {
		return nil
	}
	var out []string
	for _, p := range ch.Paths() {
		if slices.Contains(gateFiles, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
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

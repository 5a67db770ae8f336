package git

import (
	"context"
	"errors"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// fastReset brings the worktree back to tip touching only what changed:
// the paths the watcher saw are restaged (in process when the private
// index still holds the base, which it then keeps: switchBehind; else
// into the private index, which then describes the worktree exactly:
// switchTo), the files that differ from tip are rewritten (no pass over
// every file's metadata), and untracked and ignored files are removed.
// It reports false when it cannot be sure, and the caller resets fully.
func (w *Workspace) fastReset(ctx context.Context, s *slot, tip string) bool {
	if s.wt == nil || !s.exact || s.staged == "" || !s.wt.drain(s.touched) || needsFullScan(s.touched) {
		return false
	}
	g := w.private(s)
	if _, err := os.Stat(g.index); err != nil {
		return false
	}
	delete(s.touched, ".git") // the clone's own git directory, made afresh below
	cur := ""
	if s.snap != nil && s.snap.base == s.staged && s.stagedAt == s.wt.events {
		cur = s.snap.tree // nothing changed since Change staged it
	} else if cur = w.stageInProcess(ctx, s, g, s.staged); cur == "" {
		if ok, err := w.stageTouched(ctx, s, g); !ok || err != nil {
			return false
		}
		var err error
		if cur, err = line(ctx, g.c("write-tree")); err != nil {
			return false
		}
	}
	var onlyCur map[string]bool
	var err error
	if s.index == indexBehind {
		onlyCur, err = w.switchBehind(ctx, s, g, cur, tip)
	} else {
		err = w.switchTo(ctx, g, cur, tip)
	}
	if err != nil {
		s.exact = false // the worktree may be half updated: reset fully
		return false
	}
	// Untracked and ignored files can only be among the touched paths
	// (Prepare left none but kept ones): clean just those.
	left := w.leftovers(s, onlyCur)
	if len(left) > 0 {
		c := g.c(cleanArgs(w.keep)...)
		if len(left) <= 2000 {
			slices.Sort(left)
			c = g.c(append(append(cleanArgs(w.keep), "--"), left...)...)
			c.paths = true
		}
		if _, err := run(ctx, c); err != nil {
			return false
		}
	}
	// The clone's own git directory is made afresh, HEAD at tip, its
	// index a copy of the private one.
	return w.agentGit(s, tip) == nil
}

// leftovers returns the touched paths still in the worktree that clean
// must remove after the switch to tip. A file or symlink staged into cur
// that is still there is tracked at tip, unless tip has none there
// (onlyCur): had tip not had it and the index held it, the switch would
// have removed it; one the index never held (staged in process) is
// untracked, and not ignored (staging left those out): it is removed
// here, as clean would, unless a kept pattern may cover it.
func (w *Workspace) leftovers(s *slot, onlyCur map[string]bool) []string {
	var left []string
	dirs := map[string]bool{}
	for p := range s.touched {
		fi, err := os.Lstat(filepath.Join(s.dir, filepath.FromSlash(p)))
		if err != nil {
			continue
		}
		if s.added[p] && (fi.Mode().IsRegular() || fi.Mode()&os.ModeSymlink != 0) {
			if !onlyCur[p] {
				continue
			}
			if linkFreeDirs(s.dir, path.Dir(p), dirs) && !keptMaybe(w.keep, p) && removeIn(s.dir, p) == nil {
				continue
			}
		}
		left = append(left, p)
	}
	return left
}

// removeIn removes the file or symlink p of the worktree dir, through
// its root: nothing outside it, whatever a directory above p became.
func removeIn(dir, p string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.Remove(filepath.FromSlash(p))
}

// keptMaybe reports whether a keep pattern (gitignore syntax) may match
// p or a directory above it: one with a wildcard, or one naming any of
// p's components.
func keptMaybe(keep []string, p string) bool {
	comps := strings.Split(p, "/")
	for _, k := range keep {
		if strings.ContainsAny(k, "*?[\\!") {
			return true
		}
		for _, part := range strings.Split(strings.Trim(k, "/"), "/") {
			if slices.Contains(comps, part) {
				return true
			}
		}
	}
	return false
}

// maxCheckoutPaths is the most paths switchTo checks out one by one.
const maxCheckoutPaths = 200

// switchTo moves the worktree and the private index, which describes it
// exactly as the tree cur, to tip, rewriting only the files that differ.
// A few paths go through `checkout --no-overlay <tip> -- <paths>` (it
// reads no other file); many through the two-way `read-tree -m -u`.
func (w *Workspace) switchTo(ctx context.Context, g wtGit, cur, tip string) error {
	if cur == tip {
		return nil
	}
	// The paths that differ, from the object reader (no git process);
	// from diff-tree when it cannot answer.
	paths, err := w.diffNames(ctx, cur, tip, maxCheckoutPaths)
	many := errors.Is(err, errManyPaths)
	if err != nil && !many {
		c := w.ig("diff-tree", "-r", "-z", "--no-renames", "--name-only", cur, tip)
		c.readOnly = true
		out, err := run(ctx, c)
		if err != nil {
			return err
		}
		paths = splitZ(out)
		many = len(paths) > maxCheckoutPaths
	}
	switch {
	case many:
	case len(paths) == 0:
		return nil
	default:
		c := g.c(append([]string{"checkout", "--no-overlay", "--force", "--quiet", tip, "--"}, paths...)...)
		c.paths = true
		if _, err := run(ctx, c); err == nil {
			return nil
		}
		// A file replaced by a directory (or the reverse) makes a path
		// match nothing; checkout then stops before writing anything.
	}
	_, err = run(ctx, g.c("read-tree", "-m", "-u", cur, tip))
	return err
}

// switchBehind is switchTo for a private index that still holds the
// base (s.staged) while cur, the worktree's tree, was staged in process
// (indexBehind). One checkout from tip brings both to tip: the paths
// where the index differs from tip, those where the worktree does and
// tip has a file (or the index one: checkout then removes it), and the
// staged files tip keeps (their index entries are the base's). It
// returns the paths cur has and tip has not (the caller cleans those the
// index never held). With more paths, or when a tree cannot be read,
// the index is first brought up to the worktree by git, as before the
// staging in process, and switchTo does the rest.
func (w *Workspace) switchBehind(ctx context.Context, s *slot, g wtGit, cur, tip string) (map[string]bool, error) {
	idx, _, err := w.diffSides(ctx, s.staged, tip, maxCheckoutPaths)
	var wt []string
	var onlyCur map[string]bool
	if err == nil {
		wt, onlyCur, err = w.diffSides(ctx, cur, tip, maxCheckoutPaths)
	}
	paths := map[string]bool{}
	for _, p := range idx {
		paths[p] = true
	}
	for _, p := range wt {
		if !onlyCur[p] {
			paths[p] = true
		}
	}
	for p := range s.added {
		if !onlyCur[p] {
			paths[p] = true
		}
	}
	if err != nil || len(paths) > maxCheckoutPaths {
		if ok, err := w.stageTouched(ctx, s, g); !ok || err != nil {
			return nil, errors.Join(errors.New("stage the worktree for a full switch"), err)
		}
		return nil, w.switchTo(ctx, g, cur, tip)
	}
	if len(paths) == 0 {
		return onlyCur, nil
	}
	list := slices.Sorted(maps.Keys(paths))
	c := g.c(append([]string{"checkout", "--no-overlay", "--force", "--quiet", tip, "--"}, list...)...)
	c.paths = true
	if _, err := run(ctx, c); err != nil {
		// A directory of the index that tip turned into a file: its
		// paths match nothing once tip's file replaced them, and
		// checkout stops before writing anything. As for more paths.
		if ok, serr := w.stageTouched(ctx, s, g); !ok || serr != nil {
			return nil, errors.Join(err, errors.New("stage the worktree for a full switch"), serr)
		}
		return nil, w.switchTo(ctx, g, cur, tip)
	}
	return onlyCur, nil
}

// restartWatch starts recording touched paths afresh after a reset,
// with a new watcher when the old one lost track.
func (w *Workspace) restartWatch(s *slot) {
	if !w.watch {
		return
	}
	if s.wt != nil {
		s.touched = map[string]bool{}
		if s.wt.drain(s.touched) { // our own changes: forget them
			s.touched = map[string]bool{}
			return
		}
		s.wt.close()
		s.wt = nil
	}
	wt, err := newWatcher(s.dir)
	if err != nil {
		s.touched = nil
		return
	}
	s.wt, s.touched = wt, map[string]bool{}
}

package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Revert restores paths in dir to their state at base: files present at
// base are checked out from it, others are deleted (with directories
// left empty). The worktree's own index and HEAD are not used. Paths
// that are absolute, climb out of the worktree or lie under a symlinked
// directory are refused.
func (w *Workspace) Revert(ctx context.Context, dir, base string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	s, err := w.lookup(ctx, dir)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.snap = nil
	for _, p := range paths {
		if !repoPath(p) || p == ".git" || strings.HasPrefix(p, ".git/") {
			return fmt.Errorf("revert: refusing path %q", p)
		}
		if throughLink(s.dir, p) {
			return fmt.Errorf("revert: refusing path %q: a parent directory is a symlink", p)
		}
	}
	g := w.private(s)
	g.index, g.split = "", false
	atBase, err := w.presentAt(ctx, g, base, paths)
	if err != nil {
		return err
	}
	// Every removal goes through a root opened on the clone: a process
	// the agent left behind (without namespaces nothing ends it) may swap
	// a directory on the way for a link after the check above, and
	// muster must never remove where such a link points.
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return fmt.Errorf("revert: %w", err)
	}
	defer root.Close()
	var restore []string
	for _, p := range paths {
		if atBase[p] {
			restore = append(restore, p)
			continue
		}
		rel := filepath.FromSlash(p)
		if err := root.RemoveAll(rel); err != nil {
			return fmt.Errorf("revert: %w", err)
		}
		for d := filepath.Dir(rel); d != "." && d != string(filepath.Separator); d = filepath.Dir(d) {
			if root.Remove(d) != nil {
				break
			}
		}
	}
	if len(restore) > 0 {
		// A temporary index holding base, checked out path by path: the
		// worktree's own index is left alone.
		g.index = filepath.Join(s.gitDir, indexName+".revert")
		defer os.Remove(g.index)
		if _, err := run(ctx, g.c("read-tree", base)); err != nil {
			return fmt.Errorf("revert: %w", err)
		}
		for _, p := range restore {
			rel := filepath.FromSlash(p)
			// A directory or symlink now where base has a file: clear it.
			if fi, err := root.Lstat(rel); err == nil && fi.IsDir() {
				if err := root.RemoveAll(rel); err != nil {
					return fmt.Errorf("revert: %w", err)
				}
			}
		}
		c := g.c(append([]string{"checkout-index", "--force", "--"}, restore...)...)
		c.paths = true
		if _, err := run(ctx, c); err != nil {
			return fmt.Errorf("revert: %w", err)
		}
	}
	return nil
}

// throughLink reports whether a parent directory of p inside dir is a
// symlink.
func throughLink(dir, p string) bool {
	parts := strings.Split(p, "/")
	cur := dir
	for _, seg := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, seg)
		fi, err := os.Lstat(cur)
		if err != nil {
			return false
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// realDirs reports whether dir (slash-separated, inside the worktree at
// root) and each directory above it are directories, not links; known
// caches the answers.
func linkFreeDirs(root, dir string, known map[string]bool) bool {
	if dir == "." || dir == "" {
		return true
	}
	if ok, seen := known[dir]; seen {
		return ok
	}
	ok := linkFreeDirs(root, path.Dir(dir), known)
	if ok {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir)))
		// A directory gone is fine: its paths are gone too.
		ok = err != nil && errors.Is(err, os.ErrNotExist) || err == nil && fi.IsDir()
	}
	known[dir] = ok
	return ok
}

package confine

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ReadRoots returns the paths a Landlock-only confinement (no mount
// namespace) grants reading and executing beneath, so that the hidden
// paths stay unreadable: Landlock is an allow-list, so instead of "/"
// it grants every entry along the way to a hidden path but the one that
// leads to it (the siblings of each of its ancestors, and of itself).
// keep are paths that stay readable even inside a hidden one (the
// user's repository, toolchains, the program): each is added as it is.
// Hidden paths are resolved (symlinks) first, ones that do not exist are
// skipped; symbolic links among the siblings are left out (reading
// through one is checked where it leads). Without hidden paths it is
// just "/".
//
// What it costs: the directory above a hidden path can no longer be
// listed (its entries stay readable by name), and an entry created
// there after the start is unreadable (docs/security.md).
func ReadRoots(hide, keep []string) []string {
	roots := map[string]bool{"/": true}
	var hidden []string
	for _, h := range hide {
		if h = resolvedPath(h); h != "" && h != "/" {
			hidden = append(hidden, h)
		}
	}
	for _, h := range hidden {
		carve(roots, h, nil)
	}
	// A kept path is readable as a whole, but what is hidden inside it
	// (the repository's .git/config in its git directory) is carved out
	// of it again; what is kept inside a hidden path stays.
	kept := map[string]bool{}
	for _, k := range keep {
		if k != "" && filepath.IsAbs(k) {
			roots[filepath.Clean(k)] = true
			kept[filepath.Clean(k)] = true
		}
	}
	for _, h := range hidden {
		carve(roots, h, kept)
	}
	out := make([]string, 0, len(roots))
	for r := range roots {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// carve takes h out of every root that holds it: such a root is replaced
// by the entries of each directory on the way down to h but the next
// one. A root that is h itself goes too, unless kept names it; on the
// first pass (kept nil) so do the roots under h, which earlier carves
// added.
func carve(roots map[string]bool, h string, kept map[string]bool) {
	first := kept == nil
	for {
		top := ""
		for r := range roots {
			if within(h, r) && !kept[r] || r != h && within(h, r) {
				top = r
				break
			}
		}
		if top == "" {
			break
		}
		delete(roots, top)
		dir := top
		for dir != h {
			rest := strings.TrimPrefix(strings.TrimPrefix(h, dir), "/")
			next, _, _ := strings.Cut(rest, "/")
			entries, err := os.ReadDir(dir)
			if err != nil {
				break
			}
			for _, e := range entries {
				if e.Name() == next || e.Type()&os.ModeSymlink != 0 {
					continue
				}
				roots[filepath.Join(dir, e.Name())] = true
			}
			dir = filepath.Join(dir, next)
		}
	}
	if first {
		for r := range roots {
			if within(r, h) {
				delete(roots, r)
			}
		}
	}
}

// resolvedPath is p cleaned with its symlinks resolved ("" when it does
// not exist).
func resolvedPath(p string) string {
	if !filepath.IsAbs(p) {
		return ""
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return filepath.Clean(r)
}

package confine

import (
	"os"
	"path/filepath"
)

// resolver resolves paths as filepath.EvalSymlinks does, remembering the
// directories it resolved on the way. Stage one resolves some sixty
// paths at every start (the hidden ones, the read-only and writable
// trees, the PATH), most of them under the same few directories and most
// of them absent: EvalSymlinks walks each from the root with an lstat a
// component, which cost stage one about 0.8 ms a start; the resolver
// takes one lstat a path once its directory is known.
type resolver struct {
	dirs map[string]resolved
}

type resolved struct {
	path string
	err  error
}

func newResolver() *resolver { return &resolver{dirs: map[string]resolved{}} }

// resolve returns what filepath.EvalSymlinks(p) returns for an absolute
// path p. A clean p's parent resolves to a path free of symlinks; p is
// that path and p's last element unless the element is a symlink, which
// EvalSymlinks then follows from there. Anything else (a relative or
// unclean path, where ".." after a symlink means the link's parent) is
// left to EvalSymlinks.
func (r *resolver) resolve(p string) (string, error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return filepath.EvalSymlinks(p)
	}
	dir, base := filepath.Split(p)
	if base == "" {
		return p, nil // the root
	}
	parent, err := r.dir(filepath.Clean(dir))
	if err != nil {
		return "", err
	}
	at := filepath.Join(parent, base)
	fi, err := os.Lstat(at)
	if err != nil {
		return "", err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return filepath.EvalSymlinks(at)
	}
	return at, nil
}

func (r *resolver) dir(d string) (string, error) {
	if v, ok := r.dirs[d]; ok {
		return v.path, v.err
	}
	p, err := r.resolve(d)
	r.dirs[d] = resolved{p, err}
	return p, err
}

// existing returns the absolute, symlink-resolved form of each absolute
// path that exists, once each.
func (r *resolver) existing(paths []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		res, err := r.resolve(p)
		if err != nil || seen[res] {
			continue
		}
		seen[res] = true
		out = append(out, res)
	}
	return out
}

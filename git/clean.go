package git

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CleanOptions say which clones Clean removes.
type CleanOptions struct {
	// Repo is any directory inside the repository whose clones go.
	// Ignored with All.
	Repo string
	// All cleans the pools of every repository in the cache; a pool
	// whose repository no longer exists goes entirely.
	All bool
	// Keep is how many of each pool's most recently used clones stay.
	Keep int
	// CacheDir is muster's cache directory (default: CacheRoot()).
	CacheDir string
}

// CleanResult is what Clean did to one repository's pool.
type CleanResult struct {
	Repo    string `json:"repo"`     // the repository's common git directory
	Removed int    `json:"removed"`  // clones removed
	Bytes   int64  `json:"bytes"`    // disk space they took
	Kept    int    `json:"kept"`     // clones left: in use by a run, or kept by Keep
	InUse   int    `json:"in_use"`   // of Kept, leased by a live run
	Gone    bool   `json:"gone"`     // the repository no longer exists: its pool went entirely
	Pool    string `json:"pool_dir"` // the pool's directory in the cache
}

// Clean removes free clones from muster's cache (muster clean): clones a
// live run holds stay, whatever Keep says.
func Clean(ctx context.Context, opts CleanOptions) ([]CleanResult, error) {
	root := opts.CacheDir
	if root == "" {
		var err error
		if root, err = CacheRoot(); err != nil {
			return nil, err
		}
	}
	var pools []*pool
	if opts.All {
		dirs, _ := filepath.Glob(filepath.Join(root, "repos", "*"))
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, "repo"))
			if err != nil {
				continue
			}
			pools = append(pools, &pool{dir: d, common: strings.TrimSpace(string(b))})
		}
	} else {
		_, common, err := Root(ctx, opts.Repo)
		if err != nil {
			return nil, err
		}
		d := filepath.Join(root, "repos", repoKey(common))
		if _, err := os.Stat(d); err != nil {
			return []CleanResult{{Repo: common, Pool: d}}, nil
		}
		pools = append(pools, &pool{dir: d, common: common})
	}
	var out []CleanResult
	var errs []error
	for _, p := range pools {
		r := CleanResult{Repo: p.common, Pool: p.dir}
		_, err := os.Stat(p.common)
		r.Gone = errors.Is(err, os.ErrNotExist)
		keep := opts.Keep
		if r.Gone {
			keep = 0
		}
		ids, _, _ := p.cloneIDs()
		sizes := map[string]int64{}
		for _, id := range ids {
			c := p.cloneAt(id)
			sizes[id] = diskUse(c.dir) + diskUse(c.priv)
		}
		removed, err := p.evict(keep)
		if err != nil {
			errs = append(errs, err)
		}
		r.Removed = len(removed)
		for _, id := range removed {
			r.Bytes += sizes[id]
		}
		left, _, _ := p.cloneIDs()
		r.Kept = len(left)
		for _, id := range left {
			if c, err := p.tryLease(id); err == nil && c == nil {
				r.InUse++
			} else if c != nil {
				c.lease.Close()
			}
		}
		if r.Gone && r.Kept == 0 {
			if err := removeAll(p.dir); err != nil {
				errs = append(errs, err)
			}
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// diskUse returns the disk space allocated to the files under dir.
func diskUse(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += allocated(fi)
		}
		return nil
	})
	return n
}

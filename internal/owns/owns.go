// Package owns matches repository paths against a task's Owns entries: a
// file, a directory ending in "/", or a glob with "*" and "**".
package owns

import (
	"errors"
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Normalize cleans an Owns entry. It rejects empty entries, absolute
// paths, entries that climb out of the repository with "..", and bad
// glob syntax. A directory keeps its trailing "/".
func Normalize(entry string) (string, error) {
	e := strings.TrimSpace(entry)
	if e == "" {
		return "", errors.New("empty path")
	}
	e = strings.ReplaceAll(e, "\\", "/")
	if strings.HasPrefix(e, "/") || (len(e) > 1 && e[1] == ':') {
		return "", errors.New("absolute path escapes the repository")
	}
	dir := strings.HasSuffix(e, "/")
	c := path.Clean(e)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", errors.New("path escapes the repository with ..")
	}
	for _, seg := range strings.Split(e, "/") {
		if seg == ".." {
			return "", errors.New("path escapes the repository with ..")
		}
	}
	if c == "." {
		return "", errors.New("path names the whole repository; leave Owns out instead")
	}
	if !doublestar.ValidatePattern(c) {
		return "", errors.New("bad glob pattern")
	}
	if dir {
		c += "/"
	}
	return c, nil
}

// CleanPath normalises a changed path for matching. ok is false when the
// path is absolute or climbs out of the repository.
func CleanPath(p string) (string, bool) {
	p = strings.ReplaceAll(p, "\\", "/")
	if strings.HasPrefix(p, "/") {
		return "", false
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// Match reports whether the repository path p is covered by any entry.
// Entries are expected normalised; p is cleaned first.
func Match(entries []string, p string) bool {
	c, ok := CleanPath(p)
	if !ok {
		return false
	}
	for _, e := range entries {
		if matchOne(e, c) {
			return true
		}
	}
	return false
}

func matchOne(entry, p string) bool {
	if strings.HasSuffix(entry, "/") {
		dir := strings.TrimSuffix(entry, "/")
		if isGlob(dir) {
			// Every path under a directory matching the glob.
			ok, _ := doublestar.Match(dir+"/**", p)
			return ok
		}
		return strings.HasPrefix(p, dir+"/")
	}
	if isGlob(entry) {
		ok, _ := doublestar.Match(entry, p)
		return ok
	}
	return entry == p
}

// Outside returns the paths not covered by entries, in order.
func Outside(entries []string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if !Match(entries, p) {
			out = append(out, p)
		}
	}
	return out
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[{") }

// staticPrefix returns the directory part of an entry before any glob
// character, as segments.
func staticPrefix(entry string) (segs []string, exact bool) {
	e := strings.TrimSuffix(entry, "/")
	parts := strings.Split(e, "/")
	for i, s := range parts {
		if isGlob(s) {
			return parts[:i], false
		}
	}
	return parts, !strings.HasSuffix(entry, "/")
}

// Overlap reports whether two normalised entries may cover a common
// path. It is exact for files and directories, and conservative (it may
// say yes) for globs.
func Overlap(a, b string) bool {
	pa, fa := staticPrefix(a)
	pb, fb := staticPrefix(b)
	switch {
	case fa && fb:
		return a == b
	case fa:
		return matchOne(b, a)
	case fb:
		return matchOne(a, b)
	}
	// Both cover sets: they overlap when one static prefix contains the
	// other, unless both are plain directories whose prefixes differ.
	n := len(pa)
	if len(pb) < n {
		n = len(pb)
	}
	for i := 0; i < n; i++ {
		if pa[i] != pb[i] {
			return false
		}
	}
	if !isGlob(a) && !isGlob(b) {
		return true // nested or equal directories
	}
	// Globs under a common prefix: test each against the other's prefix
	// and extension shape; be conservative.
	extA, extB := path.Ext(a), path.Ext(b)
	if extA != "" && extB != "" && !isGlob(extA) && !isGlob(extB) && extA != extB &&
		!strings.HasSuffix(a, "/") && !strings.HasSuffix(b, "/") {
		return false
	}
	return true
}

// Overlaps returns the first pair of entries, one from each list, that
// overlap.
func Overlaps(a, b []string) (string, string, bool) {
	for _, x := range a {
		for _, y := range b {
			if Overlap(x, y) {
				return x, y, true
			}
		}
	}
	return "", "", false
}

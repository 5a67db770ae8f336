package mcpserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxPath is the longest path an agent may give, the kernel's PATH_MAX:
// a longer one is refused by its length, not echoed back in an error.
const maxPath = 4096

// pathLength refuses a path longer than maxPath.
func pathLength(p string) error {
	if len(p) > maxPath {
		return fmt.Errorf("a path of %d bytes: give one of at most %d", len(p), maxPath)
	}
	return nil
}

// Inside resolves a path an agent gave, relative to the repository's top
// root (or absolute), and returns it absolute. It refuses a path with a
// ".." element, an absolute path outside root, any path into a .git
// directory, and a path whose existing part goes through a symlink that
// leads out of root. Neither the path nor its parent need exist.
func Inside(root, p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("empty path")
	}
	if err := pathLength(p); err != nil {
		return "", err
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path holds a NUL byte")
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		switch {
		case part == "..":
			return "", fmt.Errorf("%s: \"..\" is not allowed; give a path inside the repository", p)
		case strings.EqualFold(part, ".git"):
			return "", fmt.Errorf("%s: paths into .git are not allowed", p)
		}
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("repository %s: %w", root, err)
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, abs)
	}
	abs = filepath.Clean(abs)
	if !within(root, abs) && !within(realRoot, abs) {
		return "", fmt.Errorf("%s is outside the repository %s", p, root)
	}
	if abs == filepath.Clean(root) || abs == realRoot {
		return "", fmt.Errorf("%s is the repository itself: give a file inside it", p)
	}
	// The nearest existing ancestor, symlinks resolved, must lie inside
	// the repository; so must the path itself when it is a symlink.
	parent, err := existingAncestor(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if !within(realRoot, parent) {
		return "", fmt.Errorf("%s leads outside the repository (through a symlink)", p)
	}
	if intoGit(realRoot, parent) {
		return "", fmt.Errorf("%s leads into .git (through a symlink): paths into .git are not allowed", p)
	}
	if st, err := os.Lstat(abs); err == nil && st.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(abs)
		if err != nil || !within(realRoot, target) {
			return "", fmt.Errorf("%s is a symlink that leads outside the repository", p)
		}
		if intoGit(realRoot, target) {
			return "", fmt.Errorf("%s is a symlink into .git: paths into .git are not allowed", p)
		}
	}
	return abs, nil
}

// intoGit reports whether the resolved path p, inside root, is or lies
// in a .git directory (any case).
func intoGit(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return true
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if strings.EqualFold(part, ".git") {
			return true
		}
	}
	return false
}

// existingAncestor resolves the symlinks of dir's nearest existing
// ancestor (dir itself when it exists).
func existingAncestor(dir string) (string, error) {
	for {
		resolved, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return resolved, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(dir); lerr == nil {
			return "", fmt.Errorf("%s is a symlink to nothing", dir)
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", err
		}
		dir = up
	}
}

// within reports whether p is dir or lies under it (both clean).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

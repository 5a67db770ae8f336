package git

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrDetached is returned by CurrentBranch when HEAD is not on a branch.
var ErrDetached = errors.New("HEAD is detached (not on a branch)")

// ErrBranchExists is returned by Open for a new run whose branch exists
// already (the run ID is taken).
var ErrBranchExists = errors.New("exists already")

// Root returns the top directory of the work tree that contains dir and
// the repository's common git directory (shared by all its worktrees),
// both absolute.
func Root(ctx context.Context, dir string) (top, gitDir string, err error) {
	out, err := line(ctx, cmd{dir: dir, readOnly: true,
		args: []string{"rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"}})
	if err != nil {
		return "", "", fmt.Errorf("%s is not inside a git work tree: %w", dir, err)
	}
	parts := strings.Split(out, "\n")
	if len(parts) != 2 {
		return "", "", fmt.Errorf("git rev-parse in %s: unexpected output %q", dir, out)
	}
	return filepath.Clean(parts[0]), filepath.Clean(parts[1]), nil
}

// CurrentBranch returns the short name of the branch checked out in the
// work tree that contains dir, or ErrDetached.
func CurrentBranch(ctx context.Context, dir string) (string, error) {
	out, err := line(ctx, cmd{dir: dir, readOnly: true, args: []string{"symbolic-ref", "--quiet", "--short", "HEAD"}})
	if err != nil {
		if exitCode(err) == 1 {
			return "", ErrDetached
		}
		return "", err
	}
	return out, nil
}

// version returns git's major and minor version numbers.
func version(ctx context.Context) (major, minor int, err error) {
	out, err := line(ctx, cmd{args: []string{"version"}})
	if err != nil {
		return 0, 0, err
	}
	return parseVersion(out)
}

func parseVersion(s string) (major, minor int, err error) {
	f := strings.Fields(s) // "git version 2.39.5"
	if len(f) < 3 {
		return 0, 0, fmt.Errorf("cannot read git version from %q", s)
	}
	nums := strings.SplitN(f[2], ".", 3)
	if len(nums) < 2 {
		return 0, 0, fmt.Errorf("cannot read git version from %q", s)
	}
	if major, err = strconv.Atoi(nums[0]); err == nil {
		minor, err = strconv.Atoi(nums[1])
	}
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read git version from %q", s)
	}
	return major, minor, nil
}

// revParse resolves rev to a commit id in the repository at dir.
func revParse(ctx context.Context, dir, rev string) (string, error) {
	return line(ctx, cmd{dir: dir, readOnly: true, args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"}})
}

// isAncestor reports whether a is an ancestor of (or equal to) b.
func isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := run(ctx, cmd{dir: dir, readOnly: true, args: []string{"merge-base", "--is-ancestor", a, b}})
	if err == nil {
		return true, nil
	}
	if exitCode(err) == 1 {
		return false, nil
	}
	return false, err
}

// TreeMode returns the mode of path in the tree of rev ("100755" for an
// executable file, "100644" for another file, "120000" for a symlink), or
// "" when the tree has no such path. path is relative to the top.
func TreeMode(ctx context.Context, repo, rev, path string) (string, error) {
	out, err := line(ctx, cmd{dir: repo, readOnly: true, args: []string{"ls-tree", rev, "--", path}})
	if err != nil {
		return "", err
	}
	mode, _, ok := strings.Cut(out, " ")
	if !ok {
		return "", nil
	}
	return mode, nil
}

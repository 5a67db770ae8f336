package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FastForwardError says why FastForward refused to move the branch. The
// branch and the work tree are then exactly as they were.
type FastForwardError struct {
	Branch string
	Reason string   // for people, e.g. "has moved since the run started"
	Paths  []string // the user's modified files the fast-forward would touch
	// Then is what to do after (", commit or stash them, then run:") and
	// Command the command to run, printed on its own line.
	Then, Command string
}

// Error says why the branch was left alone.
func (e *FastForwardError) Error() string {
	s := fmt.Sprintf("not fast-forwarding %s: %s", e.Branch, e.Reason)
	if len(e.Paths) > 0 {
		s += ": " + strings.Join(e.Paths, ", ")
	}
	s += e.Then
	if e.Command != "" {
		s += "\n    " + e.Command
	}
	return s
}

// FastForward moves the user's branch to target (the run branch) when the
// branch is still an ancestor of target. When the branch is not checked
// out anywhere it moves with update-ref (expected old value given). When
// it is checked out in a work tree, that tree must have no merge, rebase,
// cherry-pick or revert in progress, and none of its modified tracked
// files may be among the files the fast-forward changes; then
// `git merge --ff-only` runs there, which keeps every other local change
// and itself refuses to overwrite untracked files. Any refusal is a
// *FastForwardError and leaves everything untouched.
func FastForward(ctx context.Context, repo, branch, target string) error {
	ref := "refs/heads/" + branch
	old, err := revParse(ctx, repo, ref)
	if err != nil {
		return fmt.Errorf("fast-forward: branch %s: %w", branch, err)
	}
	tgt, err := revParse(ctx, repo, target)
	if err != nil {
		return fmt.Errorf("fast-forward: target %s: %w", target, err)
	}
	if old == tgt {
		return nil
	}
	ok, err := isAncestor(ctx, repo, old, tgt)
	if err != nil {
		return err
	}
	if !ok {
		return &FastForwardError{Branch: branch, Reason: fmt.Sprintf("it has moved since the run started and is no longer an ancestor of %s; merge it yourself", target)}
	}
	wt, err := checkedOutIn(ctx, repo, ref)
	if err != nil {
		return err
	}
	if wt == "" {
		_, err := run(ctx, cmd{dir: repo, args: []string{"update-ref", "-m", "muster: fast-forward to " + target, ref, tgt, old}})
		if err != nil {
			return &FastForwardError{Branch: branch, Reason: "update-ref failed: " + err.Error()}
		}
		return nil
	}
	gitDir, err := line(ctx, cmd{dir: wt, readOnly: true, args: []string{"rev-parse", "--path-format=absolute", "--git-dir"}})
	if err != nil {
		return err
	}
	if op := inProgress(gitDir); op != "" {
		return &FastForwardError{Branch: branch, Reason: fmt.Sprintf("a %s is in progress in %s", op, wt)}
	}
	dirty, err := dirtyPaths(ctx, wt)
	if err != nil {
		return err
	}
	out, err := run(ctx, cmd{dir: repo, readOnly: true, args: []string{"diff", "--no-renames", "--no-ext-diff", "--no-textconv", "--name-only", "-z", old, tgt}})
	if err != nil {
		return err
	}
	var clash []string
	for _, p := range splitZ(out) {
		if dirty[p] {
			clash = append(clash, p)
		}
	}
	if len(clash) > 0 {
		sort.Strings(clash)
		return &FastForwardError{Branch: branch, Paths: clash,
			Reason: fmt.Sprintf("it is checked out in %s and these modified files would change", wt),
			Then:   "; commit or stash them, then run:", Command: "git merge --ff-only " + target}
	}
	if _, err := run(ctx, cmd{dir: wt, hooks: true, args: []string{"merge", "--ff-only", "--quiet", tgt}}); err != nil {
		var ge *GitError
		reason := err.Error()
		if errors.As(err, &ge) {
			reason = strings.TrimSpace(ge.Stderr)
		}
		return &FastForwardError{Branch: branch, Reason: "git merge --ff-only refused in " + wt + ": " + reason}
	}
	return nil
}

// checkedOutIn returns the work tree where ref is checked out, or "".
func checkedOutIn(ctx context.Context, repo, ref string) (string, error) {
	out, err := run(ctx, cmd{dir: repo, readOnly: true, args: []string{"worktree", "list", "--porcelain", "-z"}})
	if err != nil {
		return "", err
	}
	var cur string
	for _, f := range splitZ(out) {
		switch {
		case strings.HasPrefix(f, "worktree "):
			cur = strings.TrimPrefix(f, "worktree ")
		case f == "branch "+ref:
			return cur, nil
		}
	}
	return "", nil
}

// inProgress names an operation left in progress in a work tree's git
// directory, or "".
func inProgress(gitDir string) string {
	for _, s := range []struct{ file, op string }{
		{"rebase-merge", "rebase"}, {"rebase-apply", "rebase or am"},
		{"MERGE_HEAD", "merge"}, {"CHERRY_PICK_HEAD", "cherry-pick"},
		{"REVERT_HEAD", "revert"},
	} {
		if _, err := os.Lstat(filepath.Join(gitDir, s.file)); err == nil {
			return s.op
		}
	}
	return ""
}

// dirtyPaths returns the tracked paths of a work tree that differ from
// HEAD (in the index or the files), both sides of renames.
func dirtyPaths(ctx context.Context, wt string) (map[string]bool, error) {
	out, err := run(ctx, cmd{dir: wt, readOnly: true, args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=no", "--no-renames"}})
	if err != nil {
		return nil, err
	}
	dirty := map[string]bool{}
	for _, rec := range splitZ(out) {
		if len(rec) > 3 {
			dirty[rec[3:]] = true
		}
	}
	return dirty, nil
}

// splitZ splits NUL-terminated output into its fields.
func splitZ(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// Uncommitted returns the paths of a work tree that differ from HEAD:
// tracked files changed in the index or on disk (both sides of renames)
// and untracked files git does not ignore, sorted. A run starts from
// HEAD, so none of them is in its clones.
func Uncommitted(ctx context.Context, wt string) ([]string, error) {
	out, err := run(ctx, cmd{dir: wt, readOnly: true, args: []string{"status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"}})
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, rec := range splitZ(out) {
		if len(rec) > 3 {
			paths = append(paths, rec[3:])
		}
	}
	sort.Strings(paths)
	return paths, nil
}

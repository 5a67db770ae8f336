package git

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	muster "github.com/muster-run/muster"
)

// The bounds of a change that no Owns lifts: files larger than the cap
// (never read), paths with a .git component (a nested repository or a
// gitfile would otherwise become a gitlink), the paths reserved for the
// run (Options.Reserved), and the files gates name unless a task owns
// them by name (Options.GateFiles).

// stageStreamAbove is the size above which staging streams a file into
// the object store instead of reading it into memory.
const stageStreamAbove = "8m"

// oversized returns the files staging would read (untracked and not
// ignored, or tracked and modified by their stat data) that are larger
// than the cap, found by lstat: git has read none of them. More than
// muster.MaxOversizeFiles is an error naming the cap.
func (w *Workspace) oversized(ctx context.Context, g wtGit) ([]string, error) {
	c := g.c("ls-files", "-z", "--others", "--modified", "--exclude-standard")
	c.readOnly = true
	out, err := run(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("list the changed files: %w", err)
	}
	var big []string
	for _, p := range splitZ(out) {
		fi, err := os.Lstat(filepath.Join(g.dir, filepath.FromSlash(p)))
		if err == nil && fi.Mode().IsRegular() && fi.Size() > w.maxFile {
			big = append(big, p)
		}
	}
	slices.Sort(big)
	big = slices.Compact(big)
	if len(big) > muster.MaxOversizeFiles {
		return nil, fmt.Errorf("%d files are larger than max_file_bytes (%d bytes): the cap on such files is %d", len(big), w.maxFile, muster.MaxOversizeFiles)
	}
	return big, nil
}

// addAll stages the whole worktree as `git add --all` does, leaving out
// the files over the cap (s.oversize).
func (w *Workspace) addAll(ctx context.Context, s *slot, g wtGit) error {
	big, err := w.oversized(ctx, g)
	if err != nil {
		return err
	}
	s.oversize = big
	args := []string{"add", "--all"}
	if len(big) > 0 {
		args = append(args, "--", ".")
		for _, p := range big {
			args = append(args, ":(exclude,literal)"+p)
		}
	}
	_, err = run(ctx, g.c(args...))
	return err
}

// rawChange reads `diff-tree -r -M --raw -z` output. A gitlink the
// staging made (a nested repository, or a gitfile pointing at one) is
// reported as its .git path, which no task may change: it is what the
// agent made, and a commit never holds it.
func rawChange(out []byte) (ch *muster.Change, gitlinks []string, err error) {
	f := splitZ(out)
	ch = &muster.Change{}
	for i := 0; i < len(f); {
		meta := strings.Fields(f[i])
		if len(meta) != 5 || !strings.HasPrefix(meta[0], ":") || meta[4] == "" {
			return nil, nil, fmt.Errorf("unexpected diff output %q", out)
		}
		st, newMode := meta[4], meta[1]
		n := 2
		if st[0] == 'R' || st[0] == 'C' {
			n = 3
		}
		if i+n > len(f) {
			return nil, nil, fmt.Errorf("truncated diff output %q", out)
		}
		fc := muster.FileChange{Status: st[:1], Path: f[i+1]}
		if n == 3 {
			fc.OldPath, fc.Path = f[i+1], f[i+2]
			if st[0] == 'C' {
				fc.Status, fc.OldPath = "A", ""
			}
		}
		if newMode == "160000" {
			gitlinks = append(gitlinks, fc.Path)
			fc.Path += "/.git"
		}
		ch.Files = append(ch.Files, fc)
		i += n
	}
	return ch, gitlinks, nil
}

// dropGitlinks removes the gitlinks staging made from muster's private
// index and returns the tree without them: a commit never holds one, and
// once the agent's .git is reverted the next staging sees the
// directory's files (git keeps a gitlink entry whose directory exists).
func (w *Workspace) dropGitlinks(ctx context.Context, s *slot, g wtGit, tree string, links []string) (string, error) {
	if len(links) == 0 {
		return tree, nil
	}
	c := g.c("update-index", "--force-remove", "-z", "--stdin")
	c.stdin = zList(links)
	if _, err := run(ctx, c); err != nil {
		return "", fmt.Errorf("unstage the nested repositories in %s: %w", s.dir, err)
	}
	s.exact = false
	t, err := line(ctx, g.c("write-tree"))
	if err != nil {
		return "", fmt.Errorf("write the change in %s: %w", s.dir, err)
	}
	return t, nil
}

// addOversize adds the files left out for their size to the change, so
// that Violations names them.
func addOversize(ch *muster.Change, big []string) {
	have := map[string]bool{}
	for _, f := range ch.Files {
		have[f.Path] = true
	}
	for _, p := range big {
		if !have[p] {
			ch.Files = append(ch.Files, muster.FileChange{Status: "A", Path: p})
		}
	}
}

// hasGitComponent reports whether a segment of p is .git (in any case:
// git treats .GIT alike on the file systems that fold case).
func hasGitComponent(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if strings.EqualFold(seg, ".git") {
			return true
		}
	}
	return false
}

// reservedHit reports whether p is, or lies in, a reserved path of the
// run.
func (w *Workspace) reservedHit(p string) bool {
	for _, r := range w.reserved {
		d := strings.TrimSuffix(r, "/")
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// gateFileUnowned reports whether p is a file a gate names that owns
// does not list by name (a glob or a directory is not enough).
func (w *Workspace) gateFileUnowned(p string, owns []string) bool {
	if !slices.Contains(w.gateFiles, p) {
		return false
	}
	for _, o := range owns {
		if path.Clean(strings.TrimPrefix(o, "./")) == p {
			return false
		}
	}
	return true
}

// oversizeOf returns the files the last staging of the clone at dir left
// out for their size.
func (w *Workspace) oversizeOf(dir string) map[string]bool {
	w.mu.Lock()
	s := w.byDir[filepath.Clean(dir)]
	w.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.oversize))
	for _, p := range s.oversize {
		out[p] = true
	}
	return out
}

// MaxFileBytes is the cap on a changed file's size this workspace
// applies.
func (w *Workspace) MaxFileBytes() int64 { return w.maxFile }

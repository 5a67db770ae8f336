package git

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	muster "github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/owns"
)

// wtGit runs git in one clone with muster's private git directory and
// the user's object store named explicitly: the clone's own .git (which
// the agent may have rewritten) is never read.
type wtGit struct {
	dir, gitDir string
	index       string // GIT_INDEX_FILE when set
	split       bool   // the index is muster's private one: split index
	objects     string // GIT_OBJECT_DIRECTORY
	carry       []string
	strict      []string // after carry: what git trusts of the files (strictstat.go)
}

func (g wtGit) c(args ...string) cmd {
	env := []string{"GIT_DIR=" + g.gitDir, "GIT_WORK_TREE=" + g.dir, "GIT_OBJECT_DIRECTORY=" + g.objects}
	if g.index != "" {
		env = append(env, "GIT_INDEX_FILE="+g.index)
	}
	// Index version 4 (path-prefix compression) makes the index of a
	// 50,000-file worktree a fifth smaller (3.5 MB), so every git call
	// that writes it (checkout, update-index, read-tree) hashes less. It
	// applies when git creates an index; rewrites keep the version.
	// core.bigFileThreshold: a file larger than it is hashed and written
	// as a stream (one pack of its own) rather than read whole, so the
	// memory of staging stays flat in file size (max_file_bytes caps
	// the size itself).
	a := []string{"-c", "index.version=4", "-c", "core.bigFileThreshold=" + stageStreamAbove}
	if g.split {
		// The private index is a split index: a rewrite writes only the
		// entries changed since the shared part (sharedindex.<hash>, in
		// the private git directory) was written. A new shared part
		// removes the older ones at once (git keeps them two weeks: a
		// small repository's every task writes one, and the clone's own
		// .git mirrors them).
		a = append(a, "-c", "core.splitIndex=true", "-c", "splitIndex.sharedIndexExpire=now")
	}
	a = append(a, g.strict...)
	return cmd{dir: g.dir, env: env, own: true, pre: g.carry, args: append(a, args...)}
}

// private returns git in the clone of s with muster's private index.
func (w *Workspace) private(s *slot) wtGit {
	return wtGit{dir: s.dir, gitDir: s.gitDir, index: filepath.Join(s.gitDir, indexName), split: true, objects: w.objects, carry: w.carry,
		strict: strictStat(filepath.Dir(s.dir))}
}

// lookup returns the clone at dir, locked; only clones this workspace
// prepared count. The caller unlocks it.
func (w *Workspace) lookup(ctx context.Context, dir string) (*slot, error) {
	dir = filepath.Clean(dir)
	w.mu.Lock()
	s := w.byDir[dir]
	w.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("%s is not a clone of this run: Prepare or Checkout it first", dir)
	}
	s.mu.Lock()
	return s, nil
}

// stage fills muster's private index of the worktree with the whole
// working tree against base: tracked, untracked (not ignored) and
// deleted files, whatever the agent did to its own index, HEAD or
// branches. It starts from the index Prepare left, whose stat data
// spares hashing unchanged files, and returns the tree written.
func (w *Workspace) stage(ctx context.Context, s *slot, base string) (wtGit, string, error) {
	g := w.private(s)
	if _, err := os.Stat(g.index); err != nil {
		s.staged = ""
	}
	if s.staged != base {
		// read-tree -m keeps the stat data of entries whose content
		// matches base; a broken or unmerged index falls back to a
		// plain read.
		s.exact, s.index = false, indexStaged
		if _, err := run(ctx, g.c("read-tree", "-m", base)); err != nil {
			os.Remove(g.index)
			if _, err := run(ctx, g.c("read-tree", base)); err != nil {
				return g, "", fmt.Errorf("read base %s: %w", base, err)
			}
		}
		s.staged = base
	}
	dropSpecialFiles(s)
	fast := false
	if s.wt != nil {
		defer func(events *int64) { s.stagedAt = *events }(&s.wt.events)
	}
	if s.exact && s.wt != nil && s.wt.drain(s.touched) {
		if tree := w.stageInProcess(ctx, s, g, base); tree != "" {
			w.fastStages.Add(1)
			w.inProcessStages.Add(1)
			return g, tree, nil
		}
		ok, err := w.stageTouched(ctx, s, g)
		if err != nil {
			return g, "", fmt.Errorf("stage the change in %s: %w", s.dir, err)
		}
		fast = ok
	}
	if fast {
		w.fastStages.Add(1)
	} else {
		s.added, s.index = nil, indexStaged
		w.fullStages.Add(1)
		if err := w.addAll(ctx, s, g); err != nil {
			return g, "", fmt.Errorf("stage the change in %s: %w", s.dir, err)
		}
		s.exact = true
	}
	if err := w.rehashLinked(ctx, s, g); err != nil {
		return g, "", fmt.Errorf("stage the change in %s: %w", s.dir, err)
	}
	tree, err := line(ctx, g.c("write-tree"))
	if err != nil {
		return g, "", fmt.Errorf("write the change in %s: %w", s.dir, err)
	}
	return g, tree, nil
}

// stageTouched updates the private index for the paths the watcher saw,
// as `git add --all` would for those paths: files and symlinks are added
// unless untracked and ignored, vanished paths are removed. It reports
// false, having changed nothing, when only a full `add --all` is right
// (sortTouched).
func (w *Workspace) stageTouched(ctx context.Context, s *slot, g wtGit) (bool, error) {
	s.index = indexStaged
	add, remove, gone, ok := w.sortTouched(s)
	if !ok || len(add)+len(remove) == 0 {
		return ok, nil
	}
	if len(gone) > 0 {
		if ok, err := w.goneWereTracked(ctx, g, gone); !ok || err != nil {
			return false, err
		}
	}
	add, err := w.notIgnored(ctx, s, g, add)
	if err != nil {
		return false, err
	}
	if len(remove) > 0 {
		c := g.c("update-index", "--force-remove", "-z", "--stdin")
		c.stdin = zList(remove)
		if _, err := run(ctx, c); err != nil {
			return false, err
		}
	}
	if len(add) > 0 {
		c := g.c("update-index", "--add", "--remove", "--replace", "-z", "--stdin")
		c.stdin = zList(add)
		if _, err := run(ctx, c); err != nil {
			return false, err
		}
	}
	s.added = make(map[string]bool, len(add))
	for _, p := range add {
		s.added[p] = true
	}
	return true, nil
}

// sortTouched sorts the touched paths of s as `git add --all` would
// take them: files and symlinks to add, paths to remove (gone: those
// that vanished), files over the cap left out (s.oversize). It reports
// false when only a full `add --all` is right: a .gitignore changed (it
// may reveal files nobody touched), a nested repository appeared, a
// directory became a link, or a hard link may have been used (see
// hardLinked).
func (w *Workspace) sortTouched(s *slot) (add, remove, gone []string, ok bool) {
	s.added, s.oversize = nil, nil
	delete(s.touched, ".git") // the clone's own git directory: never part of a change
	if needsFullScan(s.touched) {
		return nil, nil, nil, false
	}
	dirs := map[string]bool{}
	for p := range s.touched {
		if !linkFreeDirs(s.dir, path.Dir(p), dirs) {
			// A directory became a link (or a file): a path below it
			// is no path of the worktree, and git refuses it.
			return nil, nil, nil, false
		}
		fi, err := os.Lstat(filepath.Join(s.dir, filepath.FromSlash(p)))
		switch {
		case err != nil:
			remove, gone = append(remove, p), append(gone, p)
		case fi.IsDir():
			remove = append(remove, p) // a file replaced by a directory
		case fi.Mode().IsRegular() && hardLinked(fi):
			s.findLinked() // its other names, too: never trusted by stat data
			return nil, nil, nil, false
		case fi.Mode().IsRegular() && fi.Size() > w.maxFile:
			s.oversize = append(s.oversize, p) // never read: Violations names it
		case fi.Mode().IsRegular(), fi.Mode()&os.ModeSymlink != 0:
			add = append(add, p)
		default:
			remove = append(remove, p) // fifo, socket...: git ignores them
		}
	}
	return add, remove, gone, true
}

// notIgnored returns the paths of add that no ignore rule matches, asking
// git only when a rule may apply.
func (w *Workspace) notIgnored(ctx context.Context, s *slot, g wtGit, add []string) ([]string, error) {
	if len(add) == 0 || w.nothingIgnored(s.dir, add) {
		return add, nil
	}
	c := g.c("check-ignore", "-z", "--stdin")
	c.readOnly, c.stdin = true, zList(add)
	out, err := run(ctx, c)
	if err != nil && exitCode(err) != 1 {
		return nil, err
	}
	ignored := map[string]bool{}
	for _, p := range splitZ(out) {
		ignored[p] = true
	}
	kept := add[:0]
	for _, p := range add {
		if !ignored[p] {
			kept = append(kept, p)
		}
	}
	return kept, nil
}

// hardLinked reports whether a file has more than one name. A write
// through another name (a hard link made in an ignored directory, or
// outside the clone) reaches the file without an event on its own path,
// so the record cannot be trusted: the caller reads every file's stat
// data instead, which such a write changes.
func hardLinked(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}

// goneWereTracked reports whether every vanished touched path is in the
// private index (a tracked file deleted). A path that is not appeared and
// vanished since the last reset: it may have been a hard link to another
// file, written through and removed, so the record cannot be trusted.
func (w *Workspace) goneWereTracked(ctx context.Context, g wtGit, gone []string) (bool, error) {
	if len(gone) > 1000 {
		return false, nil
	}
	slices.Sort(gone)
	c := g.c(append([]string{"ls-files", "-z", "--"}, gone...)...)
	c.readOnly, c.paths = true, true
	out, err := run(ctx, c)
	if err != nil {
		return false, err
	}
	tracked := splitZ(out) // sorted, as the index is
	for _, p := range gone {
		i, found := slices.BinarySearch(tracked, p)
		if !found && (i >= len(tracked) || !strings.HasPrefix(tracked[i], p+"/")) {
			return false, nil
		}
	}
	return true, nil
}

// needsFullScan reports whether touched paths make the record unusable:
// a .gitignore changed (it may reveal or hide files nobody touched) or a
// nested repository appeared.
func needsFullScan(touched map[string]bool) bool {
	for p := range touched {
		if path.Base(p) == ".gitignore" || strings.HasPrefix(p, ".git/") ||
			strings.Contains(p, "/.git/") || strings.HasSuffix(p, "/.git") {
			return true
		}
	}
	return false
}

// zList joins paths for a -z --stdin reader.
func zList(paths []string) []byte {
	slices.Sort(paths)
	return []byte(strings.Join(paths, "\x00") + "\x00")
}

// Change computes everything in dir that differs from base: modified,
// added, deleted, renamed, type or mode changed files, binary files and
// symlinks alike. The working tree is compared with base, not HEAD, so
// commits the agent made (on any branch) fold into the change, and a
// rebase or merge the agent left in progress does not matter: whatever
// files lie in the working tree are the change. The result is kept for
// Diff and Commit.
func (w *Workspace) Change(ctx context.Context, dir, base string) (*muster.Change, error) {
	s, err := w.lookup(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	snap, err := w.change(ctx, s, base)
	if err != nil {
		return nil, err
	}
	return snap.change, nil
}

func (w *Workspace) change(ctx context.Context, s *slot, base string) (*snapshot, error) {
	s.snap = nil
	g, tree, err := w.stage(ctx, s, base)
	if err != nil {
		return nil, err
	}
	// The raw records without a git process where no rename can be
	// among them (Summary then counts lines in process, and Diff asks
	// git for the patch only for a review); else the raw records and the
	// patch in one diff-tree.
	raw, recs, err := w.rawInProcess(ctx, base, tree, maxCheckoutPaths)
	var patch []byte
	if err != nil {
		c := w.ig("diff-tree", "-r", "-M", "-z", "--no-ext-diff", "--no-textconv", "--patch-with-raw", base, tree)
		c.readOnly = true
		out, err := run(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("compute the change in %s: %w", s.dir, err)
		}
		raw, patch = splitRawPatch(out)
		recs = nil
	}
	ch, links, err := rawChange(raw)
	if err != nil {
		return nil, err
	}
	if tree, err = w.dropGitlinks(ctx, s, g, tree, links); err != nil {
		return nil, err
	}
	slices.Sort(s.oversize)
	addOversize(ch, s.oversize)
	s.snap = &snapshot{base: base, tree: tree, change: ch, raw: raw, recs: recs}
	if patch != nil && len(links) == 0 { // else Diff computes the patch
		s.snap.patch, s.snap.hasPatch = string(patch), true
	}
	return s.snap, nil
}

// splitRawPatch splits `diff-tree -z --patch-with-raw` output into its
// raw records and the patch after them (which -z leaves as `git diff`
// prints it; a NUL ends the raw part).
func splitRawPatch(out []byte) (raw, patch []byte) {
	pos := 0
	for pos < len(out) && out[pos] == ':' {
		end := bytes.IndexByte(out[pos:], 0)
		if end < 0 {
			return out, nil // malformed: rawChange says so
		}
		meta := out[pos : pos+end]
		paths := 1
		if f := bytes.Fields(meta); len(f) == 5 && len(f[4]) > 0 && (f[4][0] == 'R' || f[4][0] == 'C') {
			paths = 2
		}
		pos += end + 1
		for range paths {
			end := bytes.IndexByte(out[pos:], 0)
			if end < 0 {
				return out, nil
			}
			pos += end + 1
		}
	}
	raw = out[:pos]
	if pos < len(out) && out[pos] == 0 {
		pos++
	}
	return raw, out[pos:]
}

// snapshotFor returns the change last computed for base, or computes it.
func (w *Workspace) snapshotFor(ctx context.Context, s *slot, base string) (*snapshot, error) {
	if s.snap != nil && s.snap.base == base {
		return s.snap, nil
	}
	return w.change(ctx, s, base)
}

// parseNameStatus reads `--name-status -z` output.
func parseNameStatus(out []byte) (*muster.Change, error) {
	f := splitZ(out)
	ch := &muster.Change{}
	for i := 0; i < len(f); {
		st := f[i]
		if st == "" {
			return nil, fmt.Errorf("unexpected diff output %q", out)
		}
		switch st[0] {
		case 'R', 'C':
			if i+2 >= len(f) {
				return nil, fmt.Errorf("truncated diff output %q", out)
			}
			fc := muster.FileChange{Status: st[:1], OldPath: f[i+1], Path: f[i+2]}
			if st[0] == 'C' {
				fc.Status, fc.OldPath = "A", ""
			}
			ch.Files = append(ch.Files, fc)
			i += 3
		default:
			if i+1 >= len(f) {
				return nil, fmt.Errorf("truncated diff output %q", out)
			}
			ch.Files = append(ch.Files, muster.FileChange{Status: st[:1], Path: f[i+1]})
			i += 2
		}
	}
	return ch, nil
}

// Diff returns the change in dir against base as a unified diff, with
// renames detected and binary files marked ("Binary files ... differ").
// It shows the change the last Change call computed (what the checks
// saw); without one since Prepare or Revert it computes it.
func (w *Workspace) Diff(ctx context.Context, dir, base string) (string, error) {
	s, err := w.lookup(ctx, dir)
	if err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	snap, err := w.snapshotFor(ctx, s, base)
	if err != nil {
		return "", err
	}
	return w.patch(ctx, dir, snap)
}

// patch is the snapshot's patch: the one diff-tree gave with the change,
// or one git computes now (and the snapshot keeps).
func (w *Workspace) patch(ctx context.Context, dir string, snap *snapshot) (string, error) {
	if snap.hasPatch {
		return snap.patch, nil
	}
	c := w.ig("diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv", snap.base, snap.tree, "--")
	c.readOnly = true
	out, err := run(ctx, c)
	if err != nil {
		return "", fmt.Errorf("diff in %s: %w", dir, err)
	}
	snap.patch, snap.hasPatch = string(out), true
	return snap.patch, nil
}

// OwnPaths are muster's own files: no task may change them, whatever its
// Owns says. muster.toml holds the crew's commands and gates; .muster/ is
// reserved for muster's files in the repository.
var OwnPaths = []string{"muster.toml", ".muster/"}

// Violations returns, in change order and without repeats, the changed
// paths a task may not change: paths outside owns (when owns is not
// empty), paths that are absolute or climb out with "..", muster's own
// files (OwnPaths), paths with a .git component, the run's reserved
// paths (Options.Reserved), files over the size cap, files a gate names
// that owns does not list by name (Options.GateFiles), and symlinks
// added or changed whose target lies outside the repository. Invalid
// owns entries match nothing.
func (w *Workspace) Violations(ctx context.Context, dir string, change *muster.Change, ownsList []string) []string {
	var norm []string
	for _, e := range ownsList {
		if n, err := owns.Normalize(e); err == nil {
			norm = append(norm, n)
		}
	}
	restricted := len(ownsList) > 0
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if change == nil {
		return nil
	}
	big := w.oversizeOf(dir)
	for _, f := range change.Files {
		for _, p := range []string{f.OldPath, f.Path} {
			if p == "" {
				continue
			}
			c := p
			switch {
			case !repoPath(p):
				add(p)
			case owns.Match(OwnPaths, c), hasGitComponent(c), w.reservedHit(c), big[c], w.gateFileUnowned(c, ownsList):
				add(p)
			case restricted && !owns.Match(norm, c):
				add(p)
			case p == f.Path && f.Status != "D" && escapingLink(dir, c):
				add(p)
			}
		}
	}
	return out
}

// repoPath reports whether p, a path as git prints it, is a clean
// relative path inside the repository. On this side a backslash is part
// of a file name (a legal one), not a separator to normalise.
func repoPath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	c := path.Clean(p)
	return c == p && c != "." && c != ".." && !strings.HasPrefix(c, "../")
}

// escapingLink reports whether the file p in the worktree dir is a
// symlink whose target lies outside the worktree.
func escapingLink(dir, p string) bool {
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return false
	}
	t, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		return true
	}
	t = filepath.ToSlash(t)
	if path.IsAbs(t) || strings.HasPrefix(t, "//") || len(t) > 1 && t[1] == ':' {
		return true
	}
	r := path.Clean(path.Join(path.Dir(p), t))
	return r == ".." || strings.HasPrefix(r, "../") || r == ".git" || strings.HasPrefix(r, ".git/")
}

// presentAt says which of paths base has, asked of the run's long-lived
// object reader (one round trip, no git process); ls-tree when the
// reader cannot take a name (a newline in a path) or failed.
func (w *Workspace) presentAt(ctx context.Context, g wtGit, base string, paths []string) (map[string]bool, error) {
	atBase := map[string]bool{}
	if w.batch != nil {
		names := make([]string, len(paths))
		for i, p := range paths {
			names[i] = base + ":" + p
		}
		if infos, err := w.batch.InfoMany(ctx, names); err == nil {
			for i, in := range infos {
				atBase[paths[i]] = in.OID != ""
			}
			return atBase, nil
		}
	}
	c := g.c(append([]string{"ls-tree", "-z", "--name-only", "--full-tree", base, "--"}, paths...)...)
	c.readOnly, c.paths = true, true
	out, err := run(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("revert: list %s: %w", base, err)
	}
	for _, p := range splitZ(out) {
		atBase[p] = true
	}
	return atBase, nil
}

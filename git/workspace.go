package git

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	muster "github.com/muster-run/muster"
)

// Options configure Open.
type Options struct {
	// Repo is any directory inside the repository.
	Repo string
	// RunID names the run; the run branch is muster/<RunID>.
	RunID string
	// Base is the commit the run starts from. Empty: HEAD of the current
	// branch. On resume it must be the recorded base.
	Base string
	// Resume reopens a run whose branch exists already.
	Resume bool
	// Tip, on resume, is the run branch's tip as the journal records it
	// (the last Integrated commit; empty: Base). The branch must be there
	// (or at Moving): muster only ever moves it from the tip it last
	// wrote, and a branch anyone else moved or deleted is a
	// *BranchMovedError, never a new starting point.
	Tip string
	// Moving, on resume, is the commit the journal says muster was about
	// to move the branch to (from Tip) when it stopped; a branch found
	// there is muster's own move, and the tip is then Moving.
	Moving string
	// Keep lists patterns (gitignore syntax, e.g. "node_modules/") kept
	// when a worktree is cleaned between tasks.
	Keep []string
	// NoWatch turns off the inotify record of touched files (Linux):
	// every Prepare and Change then reads the metadata of every file.
	NoWatch bool
}

// Workspace is muster.Workspace over git: the run branch and a pool of
// worktrees, one per executor clone. Its methods are safe for concurrent
// use; calls on one worktree must not overlap.
type Workspace struct {
	top       string // the user's work tree
	common    string // the common git directory
	run       string
	branch    string // muster/<run>
	ref       string // refs/heads/muster/<run>
	base      string
	keep      []string
	mergeBase bool // git merge-tree knows --merge-base (git >= 2.40)
	watch     bool // record touched files with a watcher
	ident     []string
	fallback  bool

	createMu sync.Mutex // serialises git worktree add/remove

	// Counts of resets and stagings done with the watcher's record
	// (fast) or with a pass over every file (full), for tests and
	// benchmarks.
	fastResets, fullResets, fastStages, fullStages atomic.Int64

	integrateMu sync.Mutex            // serialises moves of the run branch; guards:
	tip         string                // the run branch as muster last left it (never read back from the ref)
	onBranch    map[string]bool       // commits known to be on the run branch
	meta        map[string]commitMeta // task commits made here

	mu    sync.Mutex
	slots map[string]*slot // by slot name
	byDir map[string]*slot // by worktree directory
}

// slot is one pooled worktree.
type slot struct {
	mu     sync.Mutex
	name   string
	dir    string
	gitDir string // the worktree's private git directory
	// staged is the base muster's private index was last read from.
	staged string
	// snap is the change the last Change computed, reused by Diff and
	// Commit until the next Prepare or Revert.
	snap *snapshot
	// exact: every path not in touched is in the private index exactly
	// as in the worktree; touched holds the paths the watcher saw
	// change since the last Prepare (nil without a watcher).
	exact   bool
	touched map[string]bool
	wt      *watcher
	// stagedAt is the watcher's event count when the private index was
	// last staged: no event since means it still describes the worktree.
	stagedAt int64
	// added holds the touched paths the last stageTouched put into the
	// private index as files or symlinks (untracked ignored ones left
	// out); nil when a full staging or a reset came after it.
	added map[string]bool
}

// snapshot is a change computed by Change: the tree of the worktree
// against base.
type snapshot struct {
	base, tree string
	change     *muster.Change
}

var _ muster.Workspace = (*Workspace)(nil)

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Fallback identity when git config has no user.name or user.email.
const (
	fallbackName  = "muster"
	fallbackEmail = "muster@localhost"
)

// Open opens the run's workspace: it resolves the base, creates the run
// branch muster/<RunID> there (or, with Resume, checks that it exists and
// descends from Base), and creates the run directory. Worktrees are made
// on demand by Prepare.
func Open(ctx context.Context, opts Options) (*Workspace, error) {
	if !runIDPattern.MatchString(opts.RunID) || strings.Contains(opts.RunID, "..") || strings.HasSuffix(opts.RunID, ".lock") {
		return nil, fmt.Errorf("run id %q: use letters, digits, '.', '_' and '-' (no \"..\", no \".lock\" suffix)", opts.RunID)
	}
	major, minor, err := version(ctx)
	if err != nil {
		return nil, err
	}
	if major < 2 || major == 2 && minor < 38 {
		return nil, fmt.Errorf("git %d.%d is too old: muster needs git 2.38 or newer (merge-tree --write-tree)", major, minor)
	}
	top, common, err := Root(ctx, opts.Repo)
	if err != nil {
		return nil, err
	}
	w := &Workspace{
		top: top, common: common, run: opts.RunID,
		branch: "muster/" + opts.RunID, ref: "refs/heads/muster/" + opts.RunID,
		keep:      opts.Keep,
		watch:     !opts.NoWatch,
		mergeBase: major > 2 || minor >= 40,
		slots:     map[string]*slot{}, byDir: map[string]*slot{},
		onBranch: map[string]bool{}, meta: map[string]commitMeta{},
	}
	if err := w.openBranch(ctx, opts); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(w.RunDir(), 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	if err := w.identity(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Workspace) openBranch(ctx context.Context, opts Options) error {
	if opts.Resume {
		// A process that died while moving the branch can leave its
		// lock; the caller holds the run (its journal lock), so no one
		// else is moving it now.
		if err := removeRefLock(w.common, w.run); err != nil {
			return err
		}
		if opts.Base == "" {
			return fmt.Errorf("resume run %s: the recorded base is missing", w.run)
		}
		base, err := revParse(ctx, w.top, opts.Base)
		if err != nil {
			return fmt.Errorf("resume run %s: base %s: %w", w.run, opts.Base, err)
		}
		w.base = base
		want := opts.Tip
		if want == "" {
			want = base
		}
		err = w.checkTip(ctx, want)
		if err != nil && opts.Moving != "" && w.checkTip(ctx, opts.Moving) == nil {
			want, err = opts.Moving, nil
		}
		if err != nil {
			return fmt.Errorf("resume run %s: %w", w.run, err)
		}
		w.setTip(want)
		return nil
	}
	existing, _ := revParse(ctx, w.top, w.ref)
	if existing != "" {
		return fmt.Errorf("run %s: branch %s %w", w.run, w.branch, ErrBranchExists)
	}
	rev := opts.Base
	if rev == "" {
		rev = "HEAD"
	}
	base, err := revParse(ctx, w.top, rev)
	if err != nil {
		if rev == "HEAD" {
			return fmt.Errorf("the repository at %s has no commit yet: commit something first", w.top)
		}
		return fmt.Errorf("base %s is not a commit: %w", rev, err)
	}
	zero := strings.Repeat("0", len(base))
	if _, err := run(ctx, cmd{dir: w.top, args: []string{"update-ref", "--no-deref", "-m", "muster: run " + w.run, w.ref, base, zero}}); err != nil {
		return fmt.Errorf("create branch %s: %w", w.branch, err)
	}
	w.base = base
	w.setTip(base)
	return nil
}

// identity reads user.name and user.email; when either is unset, commits
// are made as "muster <muster@localhost>".
func (w *Workspace) identity(ctx context.Context) error {
	name, _ := line(ctx, cmd{dir: w.top, readOnly: true, args: []string{"config", "user.name"}})
	email, _ := line(ctx, cmd{dir: w.top, readOnly: true, args: []string{"config", "user.email"}})
	if name == "" || email == "" {
		name, email, w.fallback = fallbackName, fallbackEmail, true
	}
	w.ident = []string{
		"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email,
		"GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email,
	}
	return nil
}

// Identity returns the author of muster's commits and whether it is the
// fallback "muster <muster@localhost>" (git config has no user.name or
// user.email).
func (w *Workspace) Identity() (ident string, fallback bool) {
	name := strings.TrimPrefix(w.ident[0], "GIT_AUTHOR_NAME=")
	email := strings.TrimPrefix(w.ident[1], "GIT_AUTHOR_EMAIL=")
	return name + " <" + email + ">", w.fallback
}

// RunDir returns <git-common-dir>/muster/runs/<run-id>, where the journal,
// the plan copy and the receipt live.
func (w *Workspace) RunDir() string { return filepath.Join(w.common, "muster", "runs", w.run) }

// Branch returns the run branch's short name, muster/<run-id>.
func (w *Workspace) Branch() string { return w.branch }

// Base returns the commit the run started from.
func (w *Workspace) Base() string { return w.base }

// Top returns the user's work tree.
func (w *Workspace) Top() string { return w.top }

// Tip returns the run branch's commit as muster last left it, once it
// has checked that the branch is still there: a branch someone else
// moved, rewrote or deleted is a *BranchMovedError.
func (w *Workspace) Tip(ctx context.Context) (string, error) {
	w.integrateMu.Lock()
	defer w.integrateMu.Unlock()
	return w.readTip(ctx)
}

// readTip returns the tip muster last left after checking the branch
// against it. The caller holds integrateMu.
func (w *Workspace) readTip(ctx context.Context) (string, error) {
	if err := w.checkTip(ctx, w.tip); err != nil {
		return "", err
	}
	return w.tip, nil
}

func (w *Workspace) setTip(tip string) {
	w.tip = tip
	w.onBranch[tip] = true
}

// poolDir returns <git-common-dir>/muster/wt/<run-id>.
func poolDir(common, run string) string { return filepath.Join(common, "muster", "wt", run) }

// slotDirName turns "claude#2" into "claude-2".
func slotDirName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	n := strings.TrimLeft(b.String(), ".")
	if n == "" {
		n = "slot"
	}
	return n
}

// Prepare returns the slot's worktree reset to the run branch tip: it is
// created on first use (detached, serialised), and on reuse any rebase,
// merge, cherry-pick or revert the agent left is dropped, HEAD is
// detached again if the agent switched branches (the branch itself is not
// moved), tracked files are reset and untracked and ignored files are
// removed except the Keep patterns.
func (w *Workspace) Prepare(ctx context.Context, slotName string) (dir, base string, err error) {
	s := w.slot(slotName)
	s.mu.Lock()
	defer s.mu.Unlock()
	tip, err := w.Tip(ctx)
	if err != nil {
		return "", "", err
	}
	if err := w.reset(ctx, s, tip); err != nil {
		if ctx.Err() != nil {
			return "", "", fmt.Errorf("prepare worktree for %s: %w", slotName, err)
		}
		// The worktree may be missing or damaged (its .git file removed,
		// say): build it again once.
		if err := w.rebuild(ctx, s, tip); err != nil {
			return "", "", fmt.Errorf("prepare worktree for %s: %w", slotName, err)
		}
	}
	return s.dir, tip, nil
}

// Checkout returns the slot's worktree reset to commit, cleaned as
// Prepare does (made on first use). Baseline and integration gates run
// there.
func (w *Workspace) Checkout(ctx context.Context, slotName, commit string) (string, error) {
	s := w.slot(slotName)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := w.reset(ctx, s, commit); err != nil {
		if err := w.rebuild(ctx, s, commit); err != nil {
			return "", fmt.Errorf("check out %s for %s: %w", commit, slotName, err)
		}
	}
	return s.dir, nil
}

func (w *Workspace) slot(name string) *slot {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.slots[name]; s != nil {
		return s
	}
	s := &slot{name: name, dir: filepath.Join(poolDir(w.common, w.run), slotDirName(name))}
	// Two names may map to one directory ("a#1", "a-1"): keep them apart.
	for i := 2; w.byDir[s.dir] != nil; i++ {
		s.dir = filepath.Join(poolDir(w.common, w.run), fmt.Sprintf("%s-%d", slotDirName(name), i))
	}
	w.slots[name], w.byDir[s.dir] = s, s
	return s
}

// reset brings an existing worktree back to tip; it fails when the
// worktree does not exist or is not usable.
func (w *Workspace) reset(ctx context.Context, s *slot, tip string) error {
	// The agent may have removed or rewritten the worktree's .git file.
	gd, err := linkedGitDir(s.dir)
	if err != nil {
		return err
	}
	if s.gitDir == "" {
		s.gitDir = gd
	}
	if !samePath(gd, s.gitDir) || !samePath(filepath.Dir(gd), filepath.Join(w.common, "worktrees")) {
		return fmt.Errorf("worktree %s points to %s, not to its own git directory", s.dir, gd)
	}
	// Leftovers of an agent: operations in progress and stale locks (the
	// agent has exited; nothing else uses this worktree).
	for _, f := range []string{"rebase-merge", "rebase-apply", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE",
		"CHERRY_PICK_HEAD", "REVERT_HEAD", "sequencer", "AUTO_MERGE", "BISECT_LOG", "BISECT_START",
		"BISECT_TERMS", "BISECT_NAMES", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK",
		"index.lock", "HEAD.lock", indexName + ".lock"} {
		if err := os.RemoveAll(filepath.Join(s.gitDir, f)); err != nil {
			return err
		}
	}
	if w.fastReset(ctx, s, tip) {
		w.fastResets.Add(1)
	} else {
		w.fullResets.Add(1)
		g := w.in(s)
		// checkout -f --detach resets the index and every tracked file
		// to tip, detaches HEAD and never moves a branch the agent
		// checked out.
		if _, err := run(ctx, g.c("checkout", "--force", "--detach", "--quiet", "--no-recurse-submodules", tip)); err != nil {
			return err
		}
		if _, err := run(ctx, g.c(cleanArgs(w.keep)...)); err != nil {
			return err
		}
		if err := copyIndex(filepath.Join(s.gitDir, "index"), filepath.Join(s.gitDir, indexName)); err != nil {
			return err
		}
	}
	s.snap = nil
	s.staged = tip
	s.exact = true
	s.added = nil
	w.restartWatch(s)
	if len(w.keep) > 0 && s.touched != nil {
		// Kept files that are not ignored belong to every change, as a
		// full scan would find them: the record must include them.
		g := s.private()
		c := g.c("ls-files", "-z", "--others", "--exclude-standard")
		c.readOnly = true
		out, err := run(ctx, c)
		if err != nil {
			return err
		}
		for _, p := range splitZ(out) {
			s.touched[p] = true
		}
	}
	return nil
}

// linkedGitDir reads a linked worktree's .git file and checks that the
// git directory it names points back to it.
func linkedGitDir(dir string) (string, error) {
	dotGit := filepath.Join(dir, ".git")
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return "", err
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%s is not a worktree link", dotGit)
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(dir, gd)
	}
	gd = filepath.Clean(gd)
	back, err := os.ReadFile(filepath.Join(gd, "gitdir"))
	if err != nil {
		return "", err
	}
	if !samePath(strings.TrimSpace(string(back)), dotGit) {
		return "", fmt.Errorf("%s does not belong to %s", gd, dir)
	}
	return gd, nil
}

// samePath reports whether two paths name the same file, symlinks
// resolved.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// cleanArgs removes untracked and ignored files, nested repositories
// included, except the keep patterns.
func cleanArgs(keep []string) []string {
	a := []string{"clean", "-ffdxq"}
	for _, k := range keep {
		a = append(a, "-e", k)
	}
	return a
}

// rebuild removes whatever is at the slot's directory and adds the
// worktree afresh. Only the bookkeeping (worktree add --no-checkout) is
// serialised; the files are checked out by reset, in parallel with other
// slots.
func (w *Workspace) rebuild(ctx context.Context, s *slot, tip string) error {
	s.wt.close()
	s.wt, s.touched, s.exact, s.staged = nil, nil, false, ""
	if err := w.addWorktree(ctx, s, tip); err != nil {
		return err
	}
	s.gitDir = ""
	return w.reset(ctx, s, tip)
}

func (w *Workspace) addWorktree(ctx context.Context, s *slot, tip string) error {
	w.createMu.Lock()
	defer w.createMu.Unlock()
	if _, err := os.Lstat(s.dir); err == nil {
		if _, err := run(ctx, cmd{dir: w.top, args: []string{"worktree", "remove", "--force", "--force", s.dir}}); err != nil {
			if err := os.RemoveAll(s.dir); err != nil {
				return err
			}
		}
	}
	if _, err := run(ctx, cmd{dir: w.top, args: []string{"worktree", "prune"}}); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.dir), 0o755); err != nil {
		return err
	}
	_, err := run(ctx, cmd{dir: w.top, args: []string{"worktree", "add", "--detach", "--no-checkout", "--quiet", s.dir, tip}})
	return err
}

// indexName is muster's private index inside a worktree's git directory.
const indexName = "muster-index"

// copyIndex copies an index file keeping its modification time, which
// git compares with file times to detect racily clean entries.
func copyIndex(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

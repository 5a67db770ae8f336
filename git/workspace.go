package git

import (
	"context"
	"errors"
	"fmt"
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
	// CacheDir is muster's cache directory, where the clones live
	// (default: CacheRoot()).
	CacheDir string
	// MaxClones bounds the clones the repository's pool keeps between
	// runs ([pool] max_clones; default DefaultMaxClones).
	MaxClones int
	// Guard watches the user's repository around each attempt
	// (muster.Guard): GuardRestore, GuardDetect, or "" / GuardOff for none.
	Guard muster.GuardPolicy
	// Reserved are repository paths no change may touch, whatever the
	// task's Owns (a trailing "/" names a directory): the config file in
	// use, the plan, the prices file, the programs the config names by
	// relative path. OwnPaths and any path with a .git component are
	// reserved always.
	Reserved []string
	// GateFiles are files a gate command names (its script, the
	// Makefile or package.json it runs): a change to one is a violation
	// unless the task's Owns lists it by name.
	GateFiles []string
	// MaxFileBytes caps the size of a changed file, checked by lstat
	// before git reads it ([run] max_file_bytes; 0:
	// muster.DefaultMaxFileBytes). A larger file is never staged.
	MaxFileBytes int64
}

// Workspace is muster.Workspace over git: the run branch and one clone
// per executor clone, leased from the repository's pool in muster's
// cache. Its methods are safe for concurrent use; calls on one clone
// must not overlap.
type Workspace struct {
	top       string // the user's work tree
	common    string // the common git directory
	objects   string // the user's object store, where muster writes its objects
	run       string
	branch    string // muster/<run>
	ref       string // refs/heads/muster/<run>
	base      string
	keep      []string
	reserved  []string // Options.Reserved
	gateFiles []string // Options.GateFiles
	maxFile   int64    // Options.MaxFileBytes, defaulted
	mergeBase bool     // git merge-tree knows --merge-base (git >= 2.40)
	watch     bool     // record touched files with a watcher
	ident     []string
	fallback  bool

	pool     *pool
	guard    *guard   // nil without Options.Guard
	integDir string   // muster's git directory for integration (bare, in the cache)
	batch    *Batch   // the long-lived object reader of the run's object store (integDir, objects)
	carry    []string // -c pairs carried from the user's config into muster's own calls
	// refConfig holds the user's settings that keep muster from moving
	// its run branch itself (refmove.go), as key=value.
	refConfig []string
	format    string // object format: sha1 or sha256
	excludes  []byte // the user's info/exclude, given to every clone
	agentCfg  []byte // the config of a clone's own git directory

	// Counts of resets and stagings done with the watcher's record
	// (fast) or with a pass over every file (full), for tests and
	// benchmarks.
	fastResets, fullResets, fastStages, fullStages atomic.Int64
	inProcessStages                                atomic.Int64 // of fastStages
	refMoves                                       atomic.Int64 // moves of the run branch made in process
	// reusedAgentGits counts the resets that kept a clone's own .git
	// (agentgit.go).
	reusedAgentGits atomic.Int64

	integrateMu sync.Mutex            // serialises moves of the run branch; guards:
	tip         string                // the run branch as muster last left it (never read back from the ref)
	onBranch    map[string]bool       // commits known to be on the run branch
	meta        map[string]commitMeta // task commits made here
	chained     map[string]string     // commits MergeOnto made above the tip, not yet on the branch, to the commit each was made on

	mu    sync.Mutex
	slots map[string]*slot // by slot name
	byDir map[string]*slot // by clone directory
}

// slot is one executor clone's leased clone.
type slot struct {
	mu   sync.Mutex
	name string
	cl   *clone // nil until the first Prepare or Checkout
	dir  string // the clone's work tree
	// gitDir is muster's private git directory of the clone (beside
	// it, never inside): muster's index and its split parts.
	gitDir string
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
	// index says what muster's private index holds (indexState).
	index indexState
	// added holds the touched paths the last stageTouched put into the
	// private index (or stageInProcess into its tree) as files or
	// symlinks (untracked ignored ones left out); nil when a full
	// staging or a reset came after it.
	added map[string]bool
	// oversize are the files the last staging left out for being larger
	// than MaxFileBytes (never read).
	oversize []string
	// linked are the clone's files seen with more than one name: never
	// trusted by their stat data (hardlink.go).
	linked map[string]bool
	// agentSig is the clone's own .git as muster last left it (nil:
	// unknown; the next reset makes it afresh).
	agentSig gitDirSig
	// idle: no attempt is using the clone (between EndAttempt and the
	// next BeginAttempt); guarded by Workspace.mu.
	idle bool
}

// snapshot is a change computed by Change: the tree of the worktree
// against base.
type snapshot struct {
	base, tree string
	change     *muster.Change
	// raw is the change's raw records as diff-tree gives them (Summary's
	// digest); recs, the same when they were found without git
	// (rawInProcess), for Summary to count lines in process.
	raw  []byte
	recs []rawRecord
	// patch is Diff's answer, computed with the change (hasPatch).
	patch    string
	hasPatch bool
}

var _ muster.Workspace = (*Workspace)(nil)

var runIDPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`) })

// Fallback identity when git config has no user.name or user.email.
const (
	fallbackName  = "muster"
	fallbackEmail = "muster@localhost"
)

// Open opens the run's workspace: it resolves the base, creates the run
// branch muster/<RunID> there (or, with Resume, checks that it exists and
// descends from Base), and creates the run directory. Clones are leased
// from the repository's pool on demand by Prepare.
func Open(ctx context.Context, opts Options) (*Workspace, error) {
	if !runIDPattern().MatchString(opts.RunID) || strings.Contains(opts.RunID, "..") || strings.HasSuffix(opts.RunID, ".lock") {
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
		top: top, common: common, objects: filepath.Join(common, "objects"), run: opts.RunID,
		branch: "muster/" + opts.RunID, ref: "refs/heads/muster/" + opts.RunID,
		keep:     opts.Keep,
		reserved: opts.Reserved, gateFiles: opts.GateFiles, maxFile: opts.MaxFileBytes,
		watch:     !opts.NoWatch,
		mergeBase: major > 2 || minor >= 40,
		slots:     map[string]*slot{}, byDir: map[string]*slot{},
		onBranch: map[string]bool{}, meta: map[string]commitMeta{}, chained: map[string]string{},
	}
	if w.maxFile <= 0 {
		w.maxFile = muster.DefaultMaxFileBytes
	}
	if err := w.openCache(ctx, opts); err != nil {
		return nil, err
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
	w.agentCfg = w.cloneConfig()
	if opts.Guard != "" && opts.Guard != GuardOff {
		if w.guard, err = newGuard(ctx, w.top, w.common, opts.Guard == GuardRestore); err != nil {
			return nil, fmt.Errorf("snapshot the repository: %w", err)
		}
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

// Batch returns the run's long-lived git object reader over the
// repository's object store (ARCHITECTURE §8.4); Close stops it.
func (w *Workspace) Batch() *Batch { return w.batch }

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

// Prepare returns the slot's clone reset to the run branch tip. The
// clone is leased from the pool on first use (a clone no other run
// holds, made if need be); then whatever the agent left is dropped: its
// git directory (HEAD, refs, config, hooks, info, index, objects) is
// made afresh from muster's template with HEAD detached at the tip,
// tracked files are reset and untracked and ignored files are removed
// except the Keep patterns.
func (w *Workspace) Prepare(ctx context.Context, slotName string) (dir, base string, err error) {
	s := w.slot(slotName)
	s.mu.Lock()
	defer s.mu.Unlock()
	tip, err := w.Tip(ctx)
	if err != nil {
		return "", "", err
	}
	if err := w.resetOrRebuild(ctx, s, tip); err != nil {
		return "", "", fmt.Errorf("prepare the clone for %s: %w", slotName, err)
	}
	return s.dir, tip, nil
}

// SetupStamp is the file beside the clone at dir where muster keeps what
// [setup] left in it (muster.SetupStore): outside the worktree, so no
// agent writes it, and kept with the pooled clone across runs.
func (w *Workspace) SetupStamp(dir string) string {
	return filepath.Clean(dir) + ".setup"
}

// Checkout returns the slot's clone reset to commit, cleaned as Prepare
// does (leased on first use). Baseline and integration gates run there.
func (w *Workspace) Checkout(ctx context.Context, slotName, commit string) (string, error) {
	s := w.slot(slotName)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := w.resetOrRebuild(ctx, s, commit); err != nil {
		return "", fmt.Errorf("check out %s for %s: %w", commit, slotName, err)
	}
	return s.dir, nil
}

func (w *Workspace) resetOrRebuild(ctx context.Context, s *slot, tip string) error {
	if s.cl == nil {
		cl, err := w.pool.lease(w.run)
		if err != nil {
			return err
		}
		w.mu.Lock()
		s.cl, s.dir, s.gitDir = cl, cl.dir, cl.priv
		w.byDir[s.dir] = s
		w.mu.Unlock()
	}
	err := w.reset(ctx, s, tip)
	if err == nil || ctx.Err() != nil {
		return err
	}
	// The clone may be missing or damaged: build it again once.
	return w.rebuild(ctx, s, tip)
}

func (w *Workspace) slot(name string) *slot {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.slots[name]; s != nil {
		return s
	}
	s := &slot{name: name}
	w.slots[name] = s
	return s
}

// reset brings an existing clone back to tip; it fails when the clone
// does not exist or is not usable.
func (w *Workspace) reset(ctx context.Context, s *slot, tip string) error {
	if err := checkCloneDirs(s.cl); err != nil {
		return err
	}
	if err := w.ownGitDir(s.gitDir, w.excludes); err != nil {
		return err
	}
	if s.wt != nil {
		s.wt.drain(s.touched)
	}
	s.unlinkLinked()
	if w.fastReset(ctx, s, tip) {
		w.fastResets.Add(1)
	} else {
		w.fullResets.Add(1)
		if err := w.fullReset(ctx, s, tip); err != nil {
			return err
		}
	}
	s.snap = nil
	s.staged = tip
	s.exact = true
	s.index = indexPristine
	s.added = nil
	w.restartWatch(s)
	if len(w.keep) > 0 && s.touched != nil {
		// Kept files that are not ignored belong to every change, as a
		// full scan would find them: the record must include them.
		g := w.private(s)
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

// fullReset resets the clone to tip reading every file's metadata:
// FIFOs, sockets and devices go (dropSpecialAll), untracked and ignored
// files go (clean), then every tracked file whose
// stat data differs from muster's private index, or that is missing,
// is written from tip and files tip does not have are removed
// (read-tree --reset -u, as reset --hard does). A write through a hard
// link changes the file's stat data, so nothing an agent did escapes it.
func (w *Workspace) fullReset(ctx context.Context, s *slot, tip string) error {
	g := w.private(s)
	if root, err := os.OpenRoot(s.dir); err == nil {
		dropSpecialAll(root, s.dir)
		root.Close()
	}
	if _, err := run(ctx, g.c(cleanArgs(w.keep)...)); err != nil {
		return err
	}
	if _, err := run(ctx, g.c("read-tree", "--reset", "-u", tip)); err != nil {
		// A broken private index: start it afresh.
		os.Remove(g.index)
		if _, err := run(ctx, g.c(cleanArgs(w.keep)...)); err != nil {
			return err
		}
		if _, err := run(ctx, g.c("read-tree", "--reset", "-u", tip)); err != nil {
			return err
		}
	}
	// clean skips a directory whose name the index held as a file (a
	// file the agent replaced with a directory); where tip has a
	// directory there, its untracked files are still in it.
	if _, err := run(ctx, g.c(cleanArgs(w.keep)...)); err != nil {
		return err
	}
	return w.agentGit(s, tip)
}

// checkCloneDirs checks that the clone's work tree and muster's private
// git directory are directories of their own, not symlinks an agent put
// there to turn muster's resets onto other files.
func checkCloneDirs(c *clone) error {
	for _, d := range []string{filepath.Dir(c.dir), c.dir, c.priv} {
		fi, err := os.Lstat(d)
		if err != nil {
			if d == c.priv && errors.Is(err, os.ErrNotExist) {
				continue // made by ownGitDir
			}
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", d)
		}
	}
	return nil
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

// rebuild removes whatever is at the clone's directories and makes the
// clone afresh: an empty work tree, muster's private git directory, then
// a full reset writes every file.
func (w *Workspace) rebuild(ctx context.Context, s *slot, tip string) error {
	s.wt.close()
	s.wt, s.touched, s.exact, s.staged = nil, nil, false, ""
	for _, d := range []string{s.dir, s.gitDir} {
		if fi, err := os.Lstat(d); err == nil && !fi.IsDir() {
			if err := os.Remove(d); err != nil {
				return err
			}
		} else if err := removeAll(d); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	return w.reset(ctx, s, tip)
}

// indexName is muster's private index inside a clone's private git
// directory.
const indexName = "muster-index"

// copyIndex copies an index file keeping its modification time, which
// git compares with file times to detect racily clean entries.
func copyIndex(src, dst string) error {
	root, err := os.OpenRoot(filepath.Dir(dst))
	if err != nil {
		return err
	}
	defer root.Close()
	return copyIndexInto(root, src, filepath.Base(dst))
}

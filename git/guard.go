package git

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	muster "github.com/muster-run/muster"
)

// The guard watches what no agent may change in the user's repository —
// refs, HEAD, the index, config, hooks, info, alternates, lock files —
// around every attempt: confinement stops an agent from writing there
// where the kernel can; the guard detects and undoes it where it cannot
// (confine = "off", no Landlock). Its snapshot is a stat of a few dozen
// files and a read of the loose refs, cheap enough for every attempt.

// Guard modes ([run] guard).
const (
	GuardRestore = muster.GuardRestore // detect, fail the attempt, undo what can be undone (the CLI's default)
	GuardDetect  = muster.GuardDetect  // detect and fail the attempt, undo nothing
	GuardOff     = muster.GuardOff
)

// maxGuardedFile bounds the content kept of a guarded file (hooks,
// config): larger files are compared by their stat data alone and not
// restored.
const maxGuardedFile = 256 << 10

type guard struct {
	mu      sync.Mutex
	top     string // the user's work tree
	common  string // the common git directory
	gitDir  string // the work tree's own git directory (== common for the main work tree)
	restore bool

	base    repoState
	packed  packedCache
	active  map[string]int      // slot -> attempts under way
	charged map[string][]string // slot -> tampering found while it ran
}

// fileSig is what the guard knows of a file: its stat data and, for small
// files, its content.
type fileSig struct {
	exists bool
	mode   fs.FileMode
	size   int64
	mtime  int64
	ino    uint64
	data   []byte
}

func (a fileSig) same(b fileSig) bool {
	if a.exists && b.exists && a.mode.IsDir() && b.mode.IsDir() {
		return true // a directory (the main work tree's .git): only its kind counts
	}
	return a.exists == b.exists && a.mode == b.mode && a.size == b.size && a.mtime == b.mtime && a.ino == b.ino
}

// repoState is one snapshot of the user's repository.
type repoState struct {
	refs  map[string]string  // ref name (and HEAD) -> value ("ref: X" for symbolic refs)
	files map[string]fileSig // guarded files by absolute path
	locks map[string]bool    // lock files by absolute path
	index fileSig            // the work tree's index: stat data
	// entries is a digest of the index's entries (path, mode, object,
	// stage), read only when its stat data changed.
	entries string
}

type packedCache struct {
	sig  fileSig
	refs map[string]string
}

// newGuard takes the run's first snapshot.
func newGuard(ctx context.Context, top, common string, restore bool) (*guard, error) {
	gd, err := line(ctx, cmd{dir: top, readOnly: true, args: []string{"rev-parse", "--path-format=absolute", "--git-dir"}})
	if err != nil {
		return nil, err
	}
	g := &guard{top: top, common: common, gitDir: filepath.Clean(gd), restore: restore,
		active: map[string]int{}, charged: map[string][]string{}}
	st, err := g.snapshot()
	if err != nil {
		return nil, err
	}
	if st.entries, err = g.indexEntries(ctx); err != nil {
		return nil, err
	}
	g.base = st
	return g, nil
}

// guardedFiles lists the files the guard compares: config, the alternates
// of the object store, shallow, every hook and every file in info/, and a
// linked work tree's own links.
func (g *guard) guardedFiles() []string {
	fs := []string{
		filepath.Join(g.common, "config"),
		filepath.Join(g.common, "config.worktree"),
		filepath.Join(g.common, "objects", "info", "alternates"),
		filepath.Join(g.common, "objects", "info", "http-alternates"),
		filepath.Join(g.common, "shallow"),
		filepath.Join(g.common, "commondir"),
		filepath.Join(g.top, ".git"),
	}
	if g.gitDir != g.common {
		fs = append(fs, filepath.Join(g.gitDir, "config.worktree"), filepath.Join(g.gitDir, "commondir"), filepath.Join(g.gitDir, "gitdir"))
	}
	for _, d := range []string{"hooks", "info"} {
		ents, _ := os.ReadDir(filepath.Join(g.common, d))
		for _, e := range ents {
			fs = append(fs, filepath.Join(g.common, d, e.Name()))
		}
	}
	return fs
}

// lockNames are the lock files git leaves beside what it writes.
var lockNames = []string{"HEAD.lock", "config.lock", "packed-refs.lock", "shallow.lock", "index.lock", "config.worktree.lock"}

func sigOf(p string, withData bool) fileSig {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileSig{}
	}
	s := fileSig{exists: true, mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	if withData && fi.Mode().IsRegular() && fi.Size() <= maxGuardedFile {
		s.data, _ = os.ReadFile(p)
	}
	return s
}

// snapshot reads the repository's guarded state (without the index's
// entries).
func (g *guard) snapshot() (repoState, error) {
	st := repoState{refs: map[string]string{}, files: map[string]fileSig{}, locks: map[string]bool{}}
	for _, p := range g.guardedFiles() {
		prev, ok := g.base.files[p]
		s := sigOf(p, false)
		if ok && prev.same(s) {
			s.data = prev.data // unchanged: no need to read it again
		} else if s.exists {
			s = sigOf(p, true)
		}
		if s.exists || ok {
			st.files[p] = s
		}
	}
	st.index = sigOf(filepath.Join(g.gitDir, "index"), false)
	for _, d := range []string{g.common, g.gitDir} {
		for _, n := range lockNames {
			if _, err := os.Lstat(filepath.Join(d, n)); err == nil {
				st.locks[filepath.Join(d, n)] = true
			}
		}
	}
	for _, d := range []string{g.common, g.gitDir} {
		if b, err := os.ReadFile(filepath.Join(d, "HEAD")); err == nil {
			st.refs[rel(g.top, filepath.Join(d, "HEAD"))] = strings.TrimSpace(string(b))
		}
	}
	// Packed refs first, loose ones over them.
	if s := sigOf(filepath.Join(g.common, "packed-refs"), false); !s.same(g.packed.sig) || g.packed.refs == nil {
		g.packed = packedCache{sig: s, refs: readPacked(filepath.Join(g.common, "packed-refs"))}
	}
	for r, v := range g.packed.refs {
		if guardedRef(r) {
			st.refs[r] = v
		}
	}
	root := filepath.Join(g.common, "refs")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := "refs/" + filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if d.IsDir() {
			if p != root && !guardedRef(name+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".lock") {
			st.locks[p] = true
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && guardedRef(name) {
			st.refs[name] = strings.TrimSpace(string(b))
		}
		return nil
	})
	return st, err
}

// guardedRef reports whether the guard watches a ref: every ref but run
// branches and muster's own refs (muster moves them; another run's may
// move any time: race candidates, refs/muster/<run>/race/) and
// remote-tracking refs (a fetch may move them any time).
func guardedRef(name string) bool {
	return !strings.HasPrefix(name, "refs/heads/muster/") && !strings.HasPrefix(name, "refs/muster/") && !strings.HasPrefix(name, "refs/remotes/")
}

func readPacked(p string) map[string]string {
	refs := map[string]string{}
	f, err := os.Open(p)
	if err != nil {
		return refs
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' || l[0] == '^' {
			continue
		}
		if oid, name, ok := strings.Cut(l, " "); ok {
			refs[name] = oid
		}
	}
	return refs
}

// indexEntries digests the index's entries, not their stat data (a `git
// status` of the user rewrites stat data).
func (g *guard) indexEntries(ctx context.Context) (string, error) {
	out, err := run(ctx, cmd{dir: g.top, readOnly: true, args: []string{"ls-files", "--stage", "-z"},
		env: []string{"GIT_DIR=" + g.gitDir, "GIT_WORK_TREE=" + g.top}})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(out)
	return fmt.Sprintf("%x", sum), nil
}

func rel(top, p string) string {
	if r, err := filepath.Rel(top, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return p
}

// begin marks an attempt under way on slot.
func (g *guard) begin(slot string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active[slot]++
}

// end marks an attempt on slot over.
func (g *guard) end(slot string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.active[slot]--; g.active[slot] <= 0 {
		delete(g.active, slot)
		delete(g.charged, slot)
	}
}

// check compares the repository with the snapshot, undoes what it can,
// charges what it found to every attempt under way (which of them did it
// cannot be told), and returns what is charged to slot.
func (g *guard) check(ctx context.Context, slot string, extra []string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if found := append(g.compare(ctx), extra...); len(found) > 0 {
		for s := range g.active {
			g.charged[s] = append(g.charged[s], found...)
		}
		if g.active[slot] == 0 { // checked outside an attempt
			g.charged[slot] = append(g.charged[slot], found...)
		}
	}
	out := g.charged[slot]
	g.charged[slot] = nil
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// restoreRef puts ref back to was with compare-and-swap on now.
func (g *guard) restoreRef(ctx context.Context, ref, was, now string, had, has bool) bool {
	var args []string
	switch {
	case had && has:
		args = []string{"update-ref", "-m", "muster: undo an agent's change", ref, was, now}
	case had:
		zero := strings.Repeat("0", len(was))
		args = []string{"update-ref", "--create-reflog", "-m", "muster: undo an agent's change", ref, was, zero}
	default:
		args = []string{"update-ref", "-d", ref, now}
	}
	_, err := run(ctx, cmd{dir: g.top, args: args})
	return err == nil
}

// adoptRef makes the current value of a ref the one to compare with next.
func (g *guard) adoptRef(ref, now string, has bool) {
	if has {
		g.base.refs[ref] = now
	} else {
		delete(g.base.refs, ref)
	}
}

// restoreFile puts a guarded file back as the snapshot had it; false when
// it cannot (content too large to have been kept, not a regular file).
func restoreFile(p string, was fileSig) bool {
	if !was.exists {
		fi, err := os.Lstat(p)
		if err != nil {
			return true
		}
		if fi.IsDir() {
			return os.RemoveAll(p) == nil
		}
		return os.Remove(p) == nil
	}
	if was.data == nil || !was.mode.IsRegular() {
		return false
	}
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		if os.RemoveAll(p) != nil {
			return false
		}
	}
	if writeFileAtomic(p, was.data) != nil {
		return false
	}
	return os.Chmod(p, was.mode.Perm()) == nil
}

// openByAnyone reports whether some process has the file open (a git
// that holds its lock right now); without /proc, it says yes.
func openByAnyone(p string) bool {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, pr := range procs {
		if pr.Name()[0] < '0' || pr.Name()[0] > '9' {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", pr.Name(), "fd"))
		for _, fd := range fds {
			if t, err := os.Readlink(filepath.Join("/proc", pr.Name(), "fd", fd.Name())); err == nil && t == p {
				return true
			}
		}
	}
	// A lock made a moment ago may belong to a git that has not opened
	// it for long; one older than a second is left behind.
	if fi, err := os.Lstat(p); err == nil && time.Since(fi.ModTime()) < time.Second {
		time.Sleep(time.Second - time.Since(fi.ModTime()))
		if _, err := os.Lstat(p); err != nil {
			return true // gone meanwhile: its git finished
		}
	}
	return false
}

var _ muster.Guard = (*Workspace)(nil)

// BeginAttempt marks the start of an attempt on slot (muster.Guard).
func (w *Workspace) BeginAttempt(slot string) {
	if w.guard == nil {
		return
	}
	w.guard.begin(slot)
	w.mu.Lock()
	if s := w.slots[slot]; s != nil {
		s.idle = false
	}
	w.mu.Unlock()
}

// CheckAttempt compares the user's repository with the run's snapshot,
// undoes what it can (Options.Guard = GuardRestore), looks for writes
// into this run's idle clones (another agent's), and returns the
// tampering charged to slot's attempt (muster.Guard).
func (w *Workspace) CheckAttempt(ctx context.Context, slot string) []string {
	if w.guard == nil {
		return nil
	}
	return w.guard.check(ctx, slot, w.idleWrites(slot))
}

// EndAttempt marks the end of the attempt on slot (muster.Guard): from
// now until its next attempt nothing may write into its clone.
func (w *Workspace) EndAttempt(slot string) {
	if w.guard == nil {
		return
	}
	w.guard.end(slot)
	w.mu.Lock()
	s := w.slots[slot]
	w.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.wt != nil && s.touched != nil {
		s.wt.drain(s.touched) // the attempt's own writes
	}
	s.mu.Unlock()
	w.mu.Lock()
	s.idle = s.wt != nil
	w.mu.Unlock()
}

// idleWrites names the writes into clones of this run that no attempt is
// using (an agent writing into a sibling clone, whose next task would
// otherwise take that file as its own). The next Prepare of such a clone
// resets what was written.
func (w *Workspace) idleWrites(self string) []string {
	w.mu.Lock()
	var idle []*slot
	for name, s := range w.slots {
		if name != self && s.idle {
			idle = append(idle, s)
		}
	}
	w.mu.Unlock()
	var found []string
	for _, s := range idle {
		if !s.mu.TryLock() {
			continue // muster is working there
		}
		if s.wt == nil {
			s.mu.Unlock()
			continue
		}
		fresh := map[string]bool{}
		ok := s.wt.drain(fresh)
		delete(fresh, ".git") // its own git directory: the agent's, made afresh anyway
		var paths []string
		for p := range fresh {
			if s.touched != nil {
				s.touched[p] = true
			}
			paths = append(paths, p)
		}
		if !ok {
			s.exact = false // record lost: the next Prepare resets fully
		}
		s.mu.Unlock()
		if len(paths) == 0 && ok {
			continue
		}
		sort.Strings(paths)
		if len(paths) > 5 {
			paths = append(paths[:5], fmt.Sprintf("and %d more", len(paths)-5))
		}
		if len(paths) == 0 {
			paths = []string{"too many to record"}
		}
		found = append(found, fmt.Sprintf("tampered: wrote into the clone of %s, which no task was using (%s)", s.name, strings.Join(paths, ", ")))
	}
	sort.Strings(found)
	return found
}

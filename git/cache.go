package git

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/muster-run/muster/internal/procid"
)

// DefaultMaxClones bounds the clones a repository's pool keeps between
// runs when [pool] max_clones is not set.
const DefaultMaxClones = 16

// CacheRoot returns muster's cache directory: $XDG_CACHE_HOME/muster,
// else ~/.cache/muster.
func CacheRoot() (string, error) {
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "muster"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("no cache directory for muster's clones: set XDG_CACHE_HOME or HOME")
	}
	return filepath.Join(home, ".cache", "muster"), nil
}

// repoKey names a repository's directory in the cache: a hash of its
// common git directory's absolute path, symlinks resolved.
func repoKey(common string) string {
	if r, err := filepath.EvalSymlinks(common); err == nil {
		common = r
	}
	sum := sha256.Sum256([]byte(filepath.Clean(common)))
	return hex.EncodeToString(sum[:10])
}

// GatesCache returns (made) the Go build cache of the confined gates of
// the repository whose common git directory is common:
// <root>/repos/<key>/gates/go-build, beside its clones, writable to its
// gates only (no agent may write it), kept with the pool.
func GatesCache(common string) (string, error) {
	root, err := CacheRoot()
	if err != nil {
		return "", err
	}
	d := filepath.Join(root, "repos", repoKey(common), "gates", "go-build")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("the gates' build cache: %w", err)
	}
	return d, nil
}

// pool is one repository's clones in the cache:
//
//	<root>/repos/<key>/
//	  repo            the repository's common git directory (for people and clean)
//	  lock            flock: held while clones are leased, made or evicted
//	  git/            muster's own git directory for integration (bare, no objects of its own)
//	  clones/<n>/     clone n: the work tree agents work in, its git directory in .git/
//	  clones/<n>.git/ muster's private git directory of clone n (its index)
//	  clones/<n>.lock flock held by the run using clone n; its mtime is the clone's last use
//	  clones/<n>.setup what [setup] left in clone n (muster.SetupStore)
//
// Agents may write only inside clones/<n>/ (under confinement); everything
// muster relies on lies beside it.
type pool struct {
	dir    string
	common string
	max    int
}

func openPool(root, common string, maxClones int) (*pool, error) {
	if maxClones <= 0 {
		maxClones = DefaultMaxClones
	}
	p := &pool{dir: filepath.Join(root, "repos", repoKey(common)), common: common, max: maxClones}
	if err := os.MkdirAll(filepath.Join(p.dir, "clones"), 0o755); err != nil {
		return nil, fmt.Errorf("muster's cache: %w", err)
	}
	f := filepath.Join(p.dir, "repo")
	if b, err := os.ReadFile(f); err != nil || strings.TrimSpace(string(b)) != common {
		if err := writeFileAtomic(f, []byte(common+"\n")); err != nil {
			return nil, fmt.Errorf("muster's cache: %w", err)
		}
	}
	return p, nil
}

// lock takes the repository-wide lock; unlock releases it.
func (p *pool) lock() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(p.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("muster's cache: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("muster's cache: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// clone is one leased clone of the pool.
type clone struct {
	id    string
	dir   string   // the work tree (ExecRequest.Dir); its git directory is dir/.git
	priv  string   // muster's private git directory
	lease *os.File // holds the flock on <id>.lock
}

func (p *pool) cloneAt(id string) *clone {
	return &clone{id: id, dir: filepath.Join(p.dir, "clones", id), priv: filepath.Join(p.dir, "clones", id+".git")}
}

// cloneIDs lists the pool's clones (those with a lease file), most
// recently used first.
func (p *pool) cloneIDs() ([]string, map[string]time.Time, error) {
	ents, err := os.ReadDir(filepath.Join(p.dir, "clones"))
	if err != nil {
		return nil, nil, err
	}
	used := map[string]time.Time{}
	var ids []string
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || e.IsDir() || !validCloneID(id) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		ids = append(ids, id)
		used[id] = fi.ModTime()
	}
	sort.Slice(ids, func(i, j int) bool {
		if !used[ids[i]].Equal(used[ids[j]]) {
			return used[ids[i]].After(used[ids[j]])
		}
		return ids[i] < ids[j]
	})
	return ids, used, nil
}

func validCloneID(id string) bool {
	n, err := strconv.Atoi(id)
	return err == nil && n > 0 && strconv.Itoa(n) == id
}

// tryLease takes clone id's lease without waiting; nil when another
// run (or this one) holds it.
func (p *pool) tryLease(id string) (*clone, error) {
	c := p.cloneAt(id)
	f, err := os.OpenFile(c.dir+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, err
	}
	c.lease = f
	return c, nil
}

// lease gives the run a clone no other run holds: the most recently used
// free one, else a new one (made by the caller's first reset). The lease
// lasts until release or the process's end.
func (p *pool) lease(runID string) (*clone, error) {
	unlock, err := p.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	ids, _, err := p.cloneIDs()
	if err != nil {
		return nil, fmt.Errorf("muster's cache: %w", err)
	}
	highest := 0
	for _, id := range ids {
		if n, _ := strconv.Atoi(id); n > highest {
			highest = n
		}
		c, err := p.tryLease(id)
		if err != nil {
			return nil, fmt.Errorf("muster's cache: lease clone %s: %w", id, err)
		}
		if c != nil {
			c.note(runID)
			return c, nil
		}
	}
	c, err := p.tryLease(strconv.Itoa(highest + 1))
	if err == nil && c == nil {
		err = errors.New("another run took it first")
	}
	if err != nil {
		return nil, fmt.Errorf("muster's cache: new clone %d: %w", highest+1, err)
	}
	c.note(runID)
	return c, nil
}

// note records who holds the lease, for people reading the cache and for
// the next muster (Holders): this process's pid and start time, which
// together name it as the marks of its processes do (internal/proc).
func (c *clone) note(runID string) {
	start, _ := procid.StartTime(os.Getpid())
	_ = c.lease.Truncate(0)
	_, _ = c.lease.WriteAt([]byte(fmt.Sprintf("pid %d start %d run %s since %s\n", os.Getpid(), start, runID, time.Now().UTC().Format(time.RFC3339))), 0)
}

// readNote reads the start of a clone's lock file: a regular file, never
// through a link nor blocking on a FIFO.
func readNote(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, 512))
}

// Holders names the muster processes that held a clone of the pool last,
// as "PID.START" (their notes; a note without a start time names none).
// A muster killed with kill -9 cannot stop the unconfined agents it
// started: the next one stops them (internal/proc.KillStale) before it
// resets their clones.
func (w *Workspace) Holders() []string { return holdersIn(filepath.Join(w.pool.dir, "clones")) }

// holdersIn reads the holders named by the lock files in clones.
func holdersIn(clones string) []string {
	locks, _ := filepath.Glob(filepath.Join(clones, "*.lock"))
	seen := map[string]bool{}
	var out []string
	for _, l := range locks {
		b, err := readNote(l)
		if err != nil {
			continue
		}
		var pid, start uint64
		if n, _ := fmt.Sscanf(string(b), "pid %d start %d ", &pid, &start); n != 2 || pid == 0 || start == 0 {
			continue
		}
		if h := fmt.Sprintf("%d.%d", pid, start); !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// release marks the clone used now (for LRU) and gives up its lease.
func (c *clone) release() {
	if c == nil || c.lease == nil {
		return
	}
	now := time.Now()
	_ = os.Chtimes(c.lease.Name(), now, now)
	c.lease.Close()
	c.lease = nil
}

// evict removes free clones, least recently used first, until at most
// keep remain; it returns the ids removed. Leased clones stay.
func (p *pool) evict(keep int) ([]string, error) {
	unlock, err := p.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	ids, _, err := p.cloneIDs()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for i := len(ids) - 1; i >= 0 && len(ids)-len(removed) > keep; i-- {
		c, err := p.tryLease(ids[i])
		if err != nil || c == nil {
			continue
		}
		if err := c.remove(); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, ids[i])
		}
		c.lease.Close()
	}
	return removed, errors.Join(errs...)
}

// remove deletes the clone's directories and, last, its lease file (the
// caller holds the lease and the repository lock).
func (c *clone) remove() error {
	if err := removeAll(c.dir); err != nil {
		return err
	}
	if err := removeAll(c.priv); err != nil {
		return err
	}
	if err := os.Remove(c.dir + ".setup"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Remove(c.dir + ".lock")
}

// removeAll is os.RemoveAll that also removes directories an agent made
// read-only: it makes them writable through a root opened on dir, so a
// directory a process left behind swaps for a link meanwhile (without
// namespaces nothing ends it) never has muster change the mode of what
// the link leads to.
func removeAll(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	root, rerr := os.OpenRoot(dir)
	if rerr != nil {
		return err
	}
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = root.Chmod(p, 0o700)
		}
		return nil
	})
	root.Close()
	return os.RemoveAll(dir)
}

// writeFileAtomic writes data to a temporary file beside name and renames
// it over name: a reader sees the old content or the new, whole.
func writeFileAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// allocated returns the disk space a file takes (its blocks), or its
// size where the system does not say.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

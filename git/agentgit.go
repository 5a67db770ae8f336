package git

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Reusing the clone's own git directory. Making it afresh at every reset
// (agentGit) removes and creates some twenty files and directories, and
// on a busy file system allocating inodes costs more CPU than the git
// processes of a task. So muster keeps the record of what it left there
// (gitDirSig: every entry's kind, inode, size, ctime and link count) and
// at the next reset, when the record still holds, writes only what
// differs (HEAD and the index, in place; a new shared index part) and
// checks the small files it does not rewrite by content too. Anything
// else (an entry added, removed, replaced, linked, written, chmod-ed: each
// moves a ctime that no process can set back) and the git directory is
// made afresh as before.

// maxGitEntries bounds the entries of a git directory muster reuses (its
// template has about fifteen).
const maxGitEntries = 64

// gitEntry is one entry of the clone's .git as lstat saw it.
type gitEntry struct {
	mode  fs.FileMode
	ino   uint64
	nlink uint64
	size  int64
	ctime int64 // ns
}

// gitDirSig is the clone's .git, entry by entry, by path inside the
// clone (".git", ".git/HEAD", ...).
type gitDirSig map[string]gitEntry

// templateDirs and templateFiles are the entries of the .git muster
// makes, besides its shared index parts.
var (
	templateDirs  = []string{".git", ".git/objects", ".git/objects/info", ".git/objects/pack", ".git/refs", ".git/refs/heads", ".git/refs/tags", ".git/info"}
	templateFiles = []string{".git/HEAD", ".git/config", ".git/objects/info/alternates", ".git/info/exclude", ".git/index"}
)

// template reports whether sig holds muster's template and nothing else:
// only such a record is worth keeping (anything else written meanwhile
// is not muster's, and the next reset makes the directory afresh).
func (was gitDirSig) template() bool {
	n := 0
	for _, d := range templateDirs {
		if e, ok := was[d]; !ok || !e.mode.IsDir() {
			return false
		}
		n++
	}
	for name, e := range was {
		if e.mode.IsDir() {
			continue
		}
		if !e.mode.IsRegular() || e.nlink != 1 || !slices.Contains(templateFiles, name) && !sharedPart(name) {
			return false
		}
		n++
	}
	return n == len(was)
}

// recordAgentGit keeps the record of the clone's .git when it is
// muster's template.
func recordAgentGit(root *os.Root, s *slot) {
	if sig, ok := readGitSig(root); ok && sig.template() {
		s.agentSig = sig
	}
}

// sameBut reports whether cur is was but for the index and its shared
// parts, which muster writes again in any case: an agent's own `git
// status` replaces .git/index and touches the shared part it uses (and
// so changes .git's ctime). rewrite names those that are not the files
// muster left.
func (was gitDirSig) sameBut(cur gitDirSig) (same bool, rewrite map[string]bool) {
	rewrite = map[string]bool{}
	for k, v := range cur {
		switch w, ok := was[k]; {
		case k == ".git":
			// Its ctime moves with the index, but not its mode: a
			// .git made writable to others is not muster's.
			if !ok || w.ino != v.ino || w.mode != v.mode {
				return false, nil
			}
		case k == ".git/index" || sharedPart(k):
			if !ok || w != v {
				rewrite[k] = true
			}
		case !ok || w != v:
			return false, nil
		}
	}
	for k := range was {
		if _, ok := cur[k]; !ok {
			if k != ".git/index" && !sharedPart(k) {
				return false, nil
			}
			rewrite[k] = true
		}
	}
	return true, rewrite
}

// sharedPart reports whether name is a shared index part's as git names
// it (.git/sharedindex.<hex>): no other name is let through as one, such
// as a link left under the temporary name muster copies a part through.
func sharedPart(name string) bool {
	h, ok := strings.CutPrefix(name, ".git/sharedindex.")
	if !ok || len(h) != 40 && len(h) != 64 {
		return false
	}
	return strings.Trim(h, "0123456789abcdef") == ""
}

// reuseAgentGit brings the clone's .git, when it is exactly as muster
// left it, to tip with the current private index, and reports whether
// it did; false leaves the caller to make it afresh (whatever was
// written meanwhile goes with it).
func (w *Workspace) reuseAgentGit(root *os.Root, s *slot, tip string) bool {
	if s.agentSig == nil {
		return false
	}
	was := s.agentSig
	s.agentSig = nil
	cur, ok := readGitSig(root)
	if !ok {
		return false
	}
	same, rewrite := was.sameBut(cur)
	if !same {
		return false
	}
	// The files not rewritten: by content too (a write through a
	// mapping made before the record need not move a ctime again).
	for name, want := range map[string][]byte{
		".git/config": w.agentCfg, ".git/objects/info/alternates": []byte(w.objects + "\n"), ".git/info/exclude": w.excludes,
	} {
		if b, err := readOwnFile(root, name, cur[name]); err != nil || !bytes.Equal(b, want) {
			return false
		}
	}
	if err := writeOwnFile(root, ".git/HEAD", []byte(tip+"\n"), cur[".git/HEAD"], nil); err != nil {
		return false
	}
	if err := w.refreshAgentIndex(root, s, cur, rewrite); err != nil {
		return false
	}
	recordAgentGit(root, s)
	return true
}

// refreshAgentIndex writes the private index over the clone's .git/index
// (in place when it is still the file muster made, else as a new file
// renamed over it) and brings the shared index parts in line: new ones
// copied, old ones removed.
func (w *Workspace) refreshAgentIndex(root *os.Root, s *slot, cur gitDirSig, rewrite map[string]bool) error {
	src := filepath.Join(s.gitDir, indexName)
	if rewrite[".git/index"] {
		if err := copyIndexInto(root, src, ".git/index"); err != nil {
			return err
		}
		return w.refreshShared(root, s, cur, rewrite)
	}
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		in.Close()
		return fmt.Errorf("%s: not a regular file", src)
	}
	data, err := io.ReadAll(in)
	in.Close()
	if err != nil {
		return err
	}
	mtime := fi.ModTime()
	if err := writeOwnFile(root, ".git/index", data, cur[".git/index"], &mtime); err != nil {
		return err
	}
	return w.refreshShared(root, s, cur, rewrite)
}

// refreshShared copies the private index's shared parts the clone's .git
// lacks (or holds other than muster left them) and removes those it no
// longer uses.
func (w *Workspace) refreshShared(root *os.Root, s *slot, cur gitDirSig, rewrite map[string]bool) error {
	want := map[string]bool{}
	shared, _ := filepath.Glob(filepath.Join(s.gitDir, "sharedindex.*"))
	for _, f := range shared {
		name := ".git/" + filepath.Base(f)
		want[name] = true
		if _, ok := cur[name]; !ok || rewrite[name] {
			if err := copyIndexInto(root, f, name); err != nil {
				return err
			}
		}
	}
	for name := range cur {
		if sharedPart(name) && !want[name] {
			if err := root.Remove(name); err != nil {
				return err
			}
		}
	}
	return nil
}

// openOwnFile opens name inside root when it is still the file muster
// made: the same inode with the same ctime, a regular file of one name.
// A link, a FIFO, or a file put in its place fails.
func openOwnFile(root *os.Root, name string, flag int, was gitEntry) (*os.File, error) {
	f, err := root.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	ino, nlink, ctime, ok := fileID(fi)
	if !ok || !fi.Mode().IsRegular() || ino != was.ino || nlink != 1 || ctime != was.ctime {
		f.Close()
		return nil, fmt.Errorf("%s is no longer the file muster made", name)
	}
	return f, nil
}

// readOwnFile reads a file muster made (openOwnFile).
func readOwnFile(root *os.Root, name string, was gitEntry) ([]byte, error) {
	f, err := openOwnFile(root, name, os.O_RDONLY, was)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxGuardedFile))
}

// writeOwnFile writes data over a file muster made (openOwnFile), in
// place, and sets its modification time to mtime when given.
func writeOwnFile(root *os.Root, name string, data []byte, was gitEntry, mtime *time.Time) error {
	f, err := openOwnFile(root, name, os.O_WRONLY, was)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && mtime != nil {
		err = root.Chtimes(name, *mtime, *mtime)
	}
	return err
}

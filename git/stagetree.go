package git

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Staging in process. The change of a task is, almost always, a few
// files the watcher saw written under a clone whose private index holds
// the base exactly: `git update-index` and `git write-tree` (two git
// processes, about a tenth of a task's CPU on one clone) would hash those
// files and write the base's trees with them. stageInProcess does the
// same through the run's long-lived object reader and the in-process
// object writer (object.go), and leaves the private index as it was:
// it still holds the base (indexBehind), and the reset that follows
// checks the touched paths out of the next tip with the others that
// differ (switchBehind), which it does anyway when the tip moved.
//
// It is taken only where the objects it writes are exactly the ones
// git would write: no attributes can apply to a path it adds (no
// .gitattributes in any directory above it, none touched, none in the
// private git directory: no filter, no end-of-line conversion), the
// carried config converts nothing and trusts the file system (file
// modes, symlinks, case), each path is one git takes as it is, the
// files are small enough to read whole, the base's trees are ones git
// writes, and no gitlink lies on the way. Anything else goes to git as
// before; so does everything when the private index no longer holds
// the base (a git staging came first).

// indexState is what muster's private index of a clone holds.
type indexState uint8

const (
	// indexStaged: the worktree as the last git staging found it, or
	// unknown (a new slot): only git stages it further.
	indexStaged indexState = iota
	// indexPristine: exactly the tree of the slot's staged base, as a
	// reset leaves it.
	indexPristine
	// indexBehind: still the base, while stageInProcess staged the
	// touched paths into a tree of their own.
	indexBehind
)

// stageInline is the largest file staged in process: larger ones are
// left to git, which streams them (stageStreamAbove).
const stageInline = 8 << 20

// The empty tree's names.
const (
	emptyTreeSHA1   = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	emptyTreeSHA256 = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
)

// errNotInline: the staging is not one stageInProcess makes.
var errNotInline = errors.New("not staged in process")

// stageInProcess stages the touched paths of s onto base's tree, as
// stageTouched and write-tree would, writing the objects itself, and
// returns the tree; "" when it cannot (the caller stages with git,
// which says what is wrong, if anything). The private index is left
// holding base (indexBehind).
func (w *Workspace) stageInProcess(ctx context.Context, s *slot, g wtGit, base string) string {
	if (s.index != indexPristine && s.index != indexBehind) || s.staged != base || len(s.linked) > 0 ||
		w.batch == nil || w.shared() || w.format != "sha1" && w.format != "sha256" || w.objects == "" ||
		!plainCheckin(w.carry) || foldsCase(filepath.Dir(s.dir)) || !absent(filepath.Join(s.gitDir, "info", "attributes")) {
		return ""
	}
	add, remove, gone, ok := w.sortTouched(s)
	if !ok || !inlinePaths(add) || !inlinePaths(remove) || touchesAttributes(s.touched) {
		return ""
	}
	add, err := w.notIgnored(ctx, s, g, add)
	if err != nil || !noneAbove(s.dir, add, ".gitattributes") {
		return ""
	}
	root, err := w.loadEdit(ctx, base+"^{tree}")
	if err != nil {
		return ""
	}
	vanished := make(map[string]bool, len(gone))
	for _, p := range gone {
		vanished[p] = true
	}
	slices.Sort(remove)
	for _, p := range remove {
		if err := w.removeEntry(ctx, root, p, vanished[p]); err != nil {
			return ""
		}
	}
	clone, err := os.OpenRoot(s.dir)
	if err != nil {
		return ""
	}
	defer clone.Close()
	slices.Sort(add)
	for _, p := range add {
		mode, oid, err := w.hashFile(clone, p)
		if err == nil {
			err = w.setEntry(ctx, root, p, treeEntry{mode: mode, oid: oid})
		}
		if err != nil {
			return ""
		}
	}
	tree, err := w.writeEdit(root, true)
	if err != nil {
		return ""
	}
	s.added = make(map[string]bool, len(add))
	for _, p := range add {
		s.added[p] = true
	}
	s.index = indexBehind
	return tree
}

// plainCheckin reports whether the carried config (-c pairs) leaves
// files as they are on their way into the object store: no end-of-line
// conversion, file modes and symlinks trusted, case kept.
func plainCheckin(carry []string) bool {
	for i := 1; i < len(carry); i += 2 {
		k, v, _ := strings.Cut(carry[i], "=")
		switch strings.ToLower(k) {
		case "core.filemode", "core.symlinks":
			if !gitTrue(v) {
				return false
			}
		case "core.ignorecase", "core.precomposeunicode", "core.autocrlf":
			if !gitFalse(v) {
				return false
			}
		case "core.eol", "core.safecrlf", "core.sharedrepository":
			return false
		}
	}
	return true
}

// gitTrue and gitFalse read a config boolean as git does; anything else
// is neither.
func gitTrue(v string) bool {
	return slices.Contains([]string{"true", "yes", "on", "1"}, strings.ToLower(v))
}

func gitFalse(v string) bool {
	return slices.Contains([]string{"false", "no", "off", "0", ""}, strings.ToLower(v))
}

// inlinePaths reports whether every path is one git takes as it is: no
// empty, "." or ".." component, and nothing git's path checks treat
// specially (a component starting ".git" or "git~" in any case, an NTFS
// short name of .gitmodules, "gitmod~" or "gi7eba~", which git refuses
// for a symlink, a code point HFS ignores (core.protectHFS, on by
// default on macOS), a component ending in a space or a dot, a
// backslash, a colon).
func inlinePaths(paths []string) bool {
	for _, p := range paths {
		if p == "" || strings.ContainsAny(p, "\\:\x00") {
			return false
		}
		for _, c := range strings.Split(p, "/") {
			l := strings.ToLower(c)
			if c == "" || c == "." || c == ".." || strings.HasPrefix(l, ".git") || strings.HasPrefix(l, "git~") ||
				strings.HasPrefix(l, "gitmod~") || strings.HasPrefix(l, "gi7eba~") || hfsIgnorable(c) ||
				strings.HasSuffix(c, " ") || strings.HasSuffix(c, ".") {
				return false
			}
		}
	}
	return true
}

// hfsIgnorable reports whether c holds a code point HFS+ ignores in
// names (git's is_hfs_dotgit skips them: ".g\u200cit" is ".git").
func hfsIgnorable(c string) bool {
	for _, r := range c {
		if r >= 0x200c && r <= 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x206a && r <= 0x206f || r == 0xfeff {
			return true
		}
	}
	return false
}

// touchesAttributes reports whether a touched path is an attributes
// file: one the agent removed still applies from the index.
func touchesAttributes(touched map[string]bool) bool {
	for p := range touched {
		if path.Base(p) == ".gitattributes" {
			return true
		}
	}
	return false
}

// hashFile writes the blob of the file or symlink p of the clone at
// root and returns its mode and object name, as `update-index --add`
// takes them: a symlink's target, a file's bytes, executable (100755)
// when its owner may execute it.
func (w *Workspace) hashFile(root *os.Root, p string) (mode, oid string, err error) {
	// Through the clone's root: whatever became of a directory above p
	// since sortTouched looked, nothing outside the clone is read.
	name := filepath.FromSlash(p)
	fi, err := root.Lstat(name)
	if err != nil {
		return "", "", err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := root.Readlink(name)
		if err != nil {
			return "", "", err
		}
		oid, err := writeLoose(w.objects, w.format, "blob", []byte(target))
		return "120000", oid, err
	}
	// No link followed, no FIFO waited on: what lies there now must be
	// the regular file sortTouched saw.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > stageInline || st.Size() > w.maxFile {
		return "", "", errNotInline
	}
	body, err := io.ReadAll(io.LimitReader(f, stageInline+1))
	if err != nil || int64(len(body)) > stageInline {
		return "", "", errNotInline
	}
	mode = "100644"
	if st.Mode().Perm()&0o100 != 0 {
		mode = "100755"
	}
	oid, err = writeLoose(w.objects, w.format, "blob", body)
	return mode, oid, err
}

// editTree is a directory of the tree being staged: its entries as
// read (oid: the tree read, "" for a new one) and the subdirectories
// being edited, which replace their entries when written.
type editTree struct {
	oid     string
	entries map[string]treeEntry
	subs    map[string]*editTree
	changed bool
}

// loadEdit reads the tree name for editing, refusing one git would not
// write (strictTree).
func (w *Workspace) loadEdit(ctx context.Context, name string) (*editTree, error) {
	info, data, err := w.batch.Contents(ctx, name)
	if err != nil {
		return nil, err
	}
	if info.Type != "tree" {
		return nil, errNotInline
	}
	entries, err := w.strictTree(data)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		// An empty directory, which no index holds: where git rewrites
		// the tree around it, it drops it.
		if e.mode == "40000" && (e.oid == emptyTreeSHA1 || e.oid == emptyTreeSHA256) {
			return nil, errNotInline
		}
	}
	return &editTree{oid: info.OID, entries: entries, subs: map[string]*editTree{}}, nil
}

// subdir returns the directory name of t for editing; create makes it
// when t has none there (replacing a file, as --replace does). nil: t
// has none and create is false. A gitlink on the way is left to git.
func (w *Workspace) subdir(ctx context.Context, t *editTree, name string, create bool) (*editTree, error) {
	if sub := t.subs[name]; sub != nil {
		return sub, nil
	}
	e, has := t.entries[name]
	switch {
	case has && e.mode == "160000":
		return nil, errNotInline
	case has && e.mode == "40000":
		sub, err := w.loadEdit(ctx, e.oid)
		if err != nil {
			return nil, err
		}
		t.subs[name] = sub
		return sub, nil
	case !create:
		return nil, nil
	}
	delete(t.entries, name)
	sub := &editTree{entries: map[string]treeEntry{}, subs: map[string]*editTree{}, changed: true}
	t.subs[name], t.changed = sub, true
	return sub, nil
}

// setEntry puts e at p, replacing whatever was there (a directory
// included) and any file on the way.
func (w *Workspace) setEntry(ctx context.Context, root *editTree, p string, e treeEntry) error {
	dir, name := path.Split(p)
	t := root
	for _, c := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if c == "" {
			continue
		}
		var err error
		if t, err = w.subdir(ctx, t, c, true); err != nil {
			return err
		}
		t.changed = true
	}
	if old, has := t.entries[name]; has && old.mode == "160000" {
		return errNotInline
	}
	delete(t.subs, name)
	t.entries[name], t.changed = e, true
	root.changed = true
	return nil
}

// removeEntry removes the file, symlink or gitlink at p, as
// `update-index --force-remove` does (a directory there stays: its
// files are removed by their own paths). A path that vanished (gone)
// must have been tracked, as goneWereTracked requires.
func (w *Workspace) removeEntry(ctx context.Context, root *editTree, p string, gone bool) error {
	dir, name := path.Split(p)
	t := root
	var on []*editTree
	for _, c := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if c == "" {
			continue
		}
		sub, err := w.subdir(ctx, t, c, false)
		if err != nil {
			return err
		}
		if sub == nil {
			if gone {
				return errNotInline
			}
			return nil
		}
		on, t = append(on, t), sub
	}
	old, has := t.entries[name]
	if sub := t.subs[name]; sub != nil || has && old.mode == "40000" {
		return nil // a directory: its files go by their own paths
	}
	switch {
	case !has && gone:
		return errNotInline
	case !has:
		return nil
	case old.mode == "160000":
		return errNotInline
	}
	delete(t.entries, name)
	t.changed = true
	for _, d := range on {
		d.changed = true
	}
	return nil
}

// writeEdit writes the changed trees under t, innermost first, and
// returns t's; an empty directory is dropped by its parent ("" and no
// error), as git writes none. The root is written even when empty.
func (w *Workspace) writeEdit(t *editTree, root bool) (string, error) {
	if !t.changed {
		return t.oid, nil
	}
	for name, sub := range t.subs {
		oid, err := w.writeEdit(sub, false)
		if err != nil {
			return "", err
		}
		if oid == "" {
			delete(t.entries, name)
		} else {
			t.entries[name] = treeEntry{mode: "40000", oid: oid}
		}
	}
	if len(t.entries) == 0 && !root {
		return "", nil
	}
	body, err := w.treeBody(t.entries)
	if err != nil {
		return "", err
	}
	return writeLoose(w.objects, w.format, "tree", body)
}

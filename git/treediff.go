package git

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"path"
	"slices"
)

// errManyPaths: more paths differ than the caller asked for.
var errManyPaths = errors.New("too many paths differ")

// treePair is a directory of the two trees compared: its path and its
// tree on each side ("" where that side has none).
type treePair struct {
	dir  string
	a, b string
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	mode string
	oid  string
}

// diffNames returns the paths whose entries differ between the trees of
// a and b (tree or commit ids), as `diff-tree -r --no-renames --name-only`
// lists them (sorted), reading the trees through the run's long-lived
// object reader, one round trip per level of directories that differ:
// no git process. More than most paths is errManyPaths.
func (w *Workspace) diffNames(ctx context.Context, a, b string, most int) ([]string, error) {
	paths, _, err := w.diffSides(ctx, a, b, most)
	return paths, err
}

// diffSides is diffNames that also says which of the paths only a has:
// b has nothing there, or a directory.
func (w *Workspace) diffSides(ctx context.Context, a, b string, most int) ([]string, map[string]bool, error) {
	var paths []string
	onlyA := map[string]bool{}
	err := w.walkTrees(ctx, a, b, func(dir string, ea, eb map[string]treeEntry) ([]treePair, error) {
		sub, leaves, gone := diffEntries(dir, ea, eb)
		paths = append(paths, leaves...)
		for _, l := range gone {
			onlyA[l] = true
		}
		if len(paths) > most {
			return nil, errManyPaths
		}
		return sub, nil
	})
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(paths)
	return paths, onlyA, nil
}

// walkTrees compares the trees of a and b (tree or commit ids) through
// the run's long-lived object reader, one round trip per level of
// directories that differ: visit gets each directory whose trees differ,
// with its entries on both sides (none on a side without it), and
// returns the subdirectories to compare next.
func (w *Workspace) walkTrees(ctx context.Context, a, b string, visit func(dir string, ea, eb map[string]treeEntry) ([]treePair, error)) error {
	if w.batch == nil {
		return errors.New("no object reader")
	}
	level := []treePair{{a: a + "^{tree}", b: b + "^{tree}"}}
	for len(level) > 0 {
		trees, oids, err := w.readTrees(ctx, level)
		if err != nil {
			return err
		}
		var next []treePair
		for _, p := range level {
			if p.a != "" && p.b != "" && oids[p.a] == oids[p.b] {
				continue
			}
			ea, err := w.parseTree(trees[p.a])
			if err != nil {
				return err
			}
			eb, err := w.parseTree(trees[p.b])
			if err != nil {
				return err
			}
			sub, err := visit(p.dir, ea, eb)
			if err != nil {
				return err
			}
			next = append(next, sub...)
		}
		level = next
	}
	return nil
}

// diffEntries compares one directory's entries on both sides: the paths
// of leaves (files, symlinks, gitlinks) that differ, and the
// subdirectories to compare next; onlyA, those of the leaves b has no
// leaf at.
func diffEntries(dir string, a, b map[string]treeEntry) (sub []treePair, leaves, onlyA []string) {
	isTree := func(e treeEntry) bool { return e.mode == "40000" }
	for name, ea := range a {
		eb, ok := b[name]
		full := path.Join(dir, name)
		switch {
		case ok && ea == eb:
		case ok && isTree(ea) && isTree(eb):
			sub = append(sub, treePair{dir: full, a: ea.oid, b: eb.oid})
		default:
			if isTree(ea) {
				sub = append(sub, treePair{dir: full, a: ea.oid})
			} else {
				leaves = append(leaves, full)
				if !ok || isTree(eb) {
					onlyA = append(onlyA, full)
				}
			}
			if ok && isTree(eb) {
				sub = append(sub, treePair{dir: full, b: eb.oid})
			} else if ok && isTree(ea) {
				leaves = append(leaves, full)
			}
		}
	}
	for name, eb := range b {
		if _, ok := a[name]; ok {
			continue
		}
		full := path.Join(dir, name)
		if isTree(eb) {
			sub = append(sub, treePair{dir: full, b: eb.oid})
		} else {
			leaves = append(leaves, full)
		}
	}
	return sub, leaves, onlyA
}

// parseTree reads a tree object's entries by name (nil data: none).
func (w *Workspace) parseTree(data []byte) (map[string]treeEntry, error) {
	out := map[string]treeEntry{}
	err := w.eachTreeEntry(data, func(mode, name, oid string) error {
		out[name] = treeEntry{mode: mode, oid: oid}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachTreeEntry is eachEntry with the workspace's object names.
func (w *Workspace) eachTreeEntry(data []byte, f func(mode, name, oid string) error) error {
	n := 20
	if w.format == "sha256" {
		n = 32
	}
	return eachEntry(data, n, f)
}

// eachEntry calls f with each entry of a tree object ("<mode>
// <name>\0<binary oid>", oids of oidLen bytes), in its order; a
// malformed object is an error, as is f's.
func eachEntry(data []byte, oidLen int, f func(mode, name, oid string) error) error {
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || nul+1+oidLen > len(data) {
			return errors.New("malformed tree object")
		}
		if err := f(string(data[:sp]), string(data[sp+1:nul]), hex.EncodeToString(data[nul+1:nul+1+oidLen])); err != nil {
			return err
		}
		data = data[nul+1+oidLen:]
	}
	return nil
}

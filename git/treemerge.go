package git

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
)

// The merge of a task commit onto a tip that moved since the task began
// is, almost always, two sets of added and modified files in different
// places: `git merge-tree` would take each side's version of whatever
// only that side changed. Such a merge is computed here, through the
// run's long-lived object reader and the in-process object writer
// (object.go), and written as git writes it, tree for tree; anything
// else goes to merge-tree as before. No git process per integration.
//
// The merge is taken here only when, in every directory both sides
// changed (differently), no entry of the base is missing on either side
// and every entry keeps its kind (tree or not): with nothing deleted
// there is no rename source, so neither rename nor directory-rename
// detection can change the result (a rename that matters deletes a path
// the other side changed, or empties a directory the other side added
// to: either way in a directory both sides changed, where it is seen).
// A directory both sides added is merged as one with an empty base.
// Leaves both sides changed or added (even alike), a non-canonical mode,
// entries out of git's order or a malformed tree: merge-tree.

// errNotTrivial: the merge is not one treeMerge computes.
var errNotTrivial = errors.New("not a trivial merge")

// maxTreeMergeDepth bounds treeMerge's recursion (directories deep).
const maxTreeMergeDepth = 256

// treeMerge returns the tree `git merge-tree --write-tree` writes for
// the clean merge of ours and theirs (commits) with merge base base, or
// "" when the merge is not the trivial kind or cannot be made here (the
// caller runs merge-tree, which says what went wrong, if anything).
func (w *Workspace) treeMerge(ctx context.Context, base, ours, theirs string) string {
	if w.batch == nil || w.shared() || w.format != "sha1" && w.format != "sha256" || w.objects == "" {
		return ""
	}
	tree, err := w.mergeDir(ctx, base+"^{tree}", ours+"^{tree}", theirs+"^{tree}", 0)
	if err != nil {
		return ""
	}
	return tree
}

// mergeDir merges one directory's three trees (object names; b "": a
// directory both sides added), writing the merged tree when it is new.
func (w *Workspace) mergeDir(ctx context.Context, b, o, t string, depth int) (string, error) {
	if depth > maxTreeMergeDepth {
		return "", errNotTrivial
	}
	names := []string{b, o, t}
	if b == "" {
		names = names[1:]
	}
	infos, data, err := w.batch.doMany(ctx, "contents", names)
	if err != nil {
		return "", err
	}
	for _, in := range infos {
		if in.Type != "tree" {
			return "", errNotTrivial
		}
	}
	if b == "" {
		infos, data = append([]ObjectInfo{{}}, infos...), append([][]byte{nil}, data...)
	}
	// Even a root one side left alone is merged entry by entry, as
	// merge-tree merges it (so rewrites a tree git would not write);
	// below it, only directories both sides changed come here.
	if infos[1].OID == infos[2].OID {
		return "", errNotTrivial // both changed it alike: merge-tree rewrites it
	}
	var trees [3]map[string]treeEntry
	for i := range trees {
		if trees[i], err = w.strictTree(data[i]); err != nil {
			return "", err
		}
	}
	merged, err := w.mergeEntries(ctx, trees[0], trees[1], trees[2], depth)
	if err != nil {
		return "", err
	}
	body, err := w.treeBody(merged)
	if err != nil {
		return "", err
	}
	return writeLoose(w.objects, w.format, "tree", body)
}

// mergeEntries merges the entries of one directory both sides changed.
func (w *Workspace) mergeEntries(ctx context.Context, eb, eo, et map[string]treeEntry, depth int) (map[string]treeEntry, error) {
	isTree := func(e treeEntry) bool { return e.mode == "40000" }
	merged := make(map[string]treeEntry, len(eo)+len(et))
	for name, b := range eb {
		o, okO := eo[name]
		t, okT := et[name]
		switch {
		case !okO || !okT:
			return nil, errNotTrivial // deleted (or renamed away) on a side
		case isTree(o) != isTree(b) || isTree(t) != isTree(b):
			return nil, errNotTrivial // a file became a directory, or the reverse
		case o == b:
			merged[name] = t
		case t == b:
			merged[name] = o
		case isTree(o): // both trees, changed on both sides
			tree, err := w.mergeDir(ctx, b.oid, o.oid, t.oid, depth+1)
			if err != nil {
				return nil, err
			}
			merged[name] = treeEntry{mode: "40000", oid: tree}
		default:
			return nil, errNotTrivial // a leaf both sides changed
		}
	}
	for i, side := range []map[string]treeEntry{eo, et} {
		for name, e := range side {
			if _, ok := eb[name]; ok {
				continue
			}
			o, inO := eo[name]
			t, inT := et[name]
			switch {
			case i == 1 && inO: // both sides': merged with ours'
			case !inO || !inT:
				merged[name] = e
			case isTree(o) && isTree(t): // a directory both sides added
				tree, err := w.mergeDir(ctx, "", o.oid, t.oid, depth+1)
				if err != nil {
					return nil, err
				}
				merged[name] = treeEntry{mode: "40000", oid: tree}
			default:
				return nil, errNotTrivial // a leaf added on both sides
			}
		}
	}
	return merged, nil
}

// canonicalModes are the modes git writes in trees (tree-walk's
// canon_mode): a tree read with any other is left to merge-tree.
var canonicalModes = []string{"40000", "100644", "100755", "120000", "160000"}

// strictTree reads a tree object's entries by name, as parseTree does,
// refusing (errNotTrivial) a duplicate name, a name git would not write,
// a non-canonical mode or entries out of git's order.
func (w *Workspace) strictTree(data []byte) (map[string]treeEntry, error) {
	out := map[string]treeEntry{}
	prev := ""
	err := w.eachTreeEntry(data, func(mode, name, oid string) error {
		if _, dup := out[name]; dup || !slices.Contains(canonicalModes, mode) ||
			name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return errNotTrivial
		}
		// Out of git's order, merge-tree's walk of the tree goes
		// astray (it can lose an entry): its result is its own.
		key := name
		if mode == "40000" {
			key += "/"
		}
		if len(out) > 0 && key <= prev {
			return errNotTrivial
		}
		prev = key
		out[name] = treeEntry{mode: mode, oid: oid}
		return nil
	})
	if err != nil {
		return nil, errNotTrivial
	}
	return out, nil
}

// treeBody returns the tree object of entries as git writes it: sorted
// by name, a directory's name compared as if it ended in "/".
func (w *Workspace) treeBody(entries map[string]treeEntry) ([]byte, error) {
	key := func(name string) string {
		if entries[name].mode == "40000" {
			return name + "/"
		}
		return name
	}
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(key(a), key(b)) })
	var body bytes.Buffer
	for _, name := range names {
		e := entries[name]
		oid, err := hex.DecodeString(e.oid)
		if err != nil {
			return nil, errNotTrivial
		}
		body.WriteString(e.mode + " " + name + "\x00")
		body.Write(oid)
	}
	return body.Bytes(), nil
}

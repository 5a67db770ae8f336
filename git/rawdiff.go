package git

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// errNeedsGit: the change has what only git's own diff tells right (a
// file added and another deleted, which may be a rename; a type change;
// a nested repository): diff-tree computes it.
var errNeedsGit = errors.New("the change needs git's rename detection")

// rawRecord is one file that differs between two trees: its path and,
// on each side, its canonical mode and object ("" where that side has
// none).
type rawRecord struct {
	path             string
	oldMode, newMode string
	oldOID, newOID   string
}

// status is the record's letter in diff-tree's raw output.
func (r rawRecord) status() byte {
	switch {
	case r.oldOID == "":
		return 'A'
	case r.newOID == "":
		return 'D'
	case r.oldMode[:2] != r.newMode[:2]: // 10, 12 or 16: another type
		return 'T'
	}
	return 'M'
}

// rawInProcess computes the raw records of `diff-tree -r -M -z` between
// the trees of a and b through the run's object reader, without a git
// process, when no rename can be among them: no file both added and
// another deleted, no type change, no nested repository (errNeedsGit);
// more than most files is errManyPaths. It returns diff-tree's output
// byte for byte (rawChange reads it; TestRawInProcessIsDiffTree) and the
// records.
func (w *Workspace) rawInProcess(ctx context.Context, a, b string, most int) ([]byte, []rawRecord, error) {
	recs, err := w.rawRecords(ctx, a, b, most)
	if err != nil {
		return nil, nil, err
	}
	added, deleted := false, false
	for _, r := range recs {
		st := r.status()
		added, deleted = added || st == 'A', deleted || st == 'D'
		if st == 'T' || added && deleted || r.oldMode == "160000" || r.newMode == "160000" {
			return nil, nil, errNeedsGit
		}
	}
	zero := strings.Repeat("0", w.oidHexLen())
	var out []byte
	for _, r := range recs {
		om, nm, oo, no := r.oldMode, r.newMode, r.oldOID, r.newOID
		if oo == "" {
			om, oo = "000000", zero
		}
		if no == "" {
			nm, no = "000000", zero
		}
		out = fmt.Appendf(out, ":%s %s %s %s %c\x00%s\x00", om, nm, oo, no, r.status(), r.path)
	}
	return out, recs, nil
}

// oidHexLen is the length of an object name in hex.
func (w *Workspace) oidHexLen() int {
	if w.format == "sha256" {
		return 64
	}
	return 40
}

// rawRecords lists the files (leaves: files, symlinks, gitlinks) whose
// entries differ between the trees of a and b, sorted by path (diff-tree's
// order), one object-reader round trip per level of directories that
// differ (walkTrees).
func (w *Workspace) rawRecords(ctx context.Context, a, b string, most int) ([]rawRecord, error) {
	var recs []rawRecord
	err := w.walkTrees(ctx, a, b, func(dir string, ea, eb map[string]treeEntry) ([]treePair, error) {
		sub, leaves, err := leafRecords(dir, ea, eb)
		if err != nil {
			return nil, err
		}
		if recs = append(recs, leaves...); len(recs) > most {
			return nil, errManyPaths
		}
		return sub, nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(recs, func(x, y rawRecord) int { return strings.Compare(x.path, y.path) })
	return recs, nil
}

// readTrees reads the trees of a level (both sides of each pair) in one
// round trip: their contents and object names by the names asked.
func (w *Workspace) readTrees(ctx context.Context, level []treePair) (map[string][]byte, map[string]string, error) {
	var names []string
	for _, p := range level {
		for _, t := range []string{p.a, p.b} {
			if t != "" {
				names = append(names, t)
			}
		}
	}
	infos, data, err := w.batch.doMany(ctx, "contents", names)
	if err != nil {
		return nil, nil, err
	}
	trees, oids := map[string][]byte{}, map[string]string{}
	for i, in := range infos {
		if in.Type != "tree" {
			return nil, nil, fmt.Errorf("%s is a %s, not a tree", names[i], in.Type)
		}
		trees[names[i]], oids[names[i]] = data[i], in.OID
	}
	return trees, oids, nil
}

// leafRecords compares one directory's entries on both sides: the
// records of the leaves that differ (a leaf replaced by a directory, or
// the reverse, is a leaf on one side only), and the subdirectories to
// compare next.
func leafRecords(dir string, a, b map[string]treeEntry) (sub []treePair, recs []rawRecord, err error) {
	names := make([]string, 0, len(a)+len(b))
	for n := range a {
		names = append(names, n)
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	for _, name := range names {
		full := path.Join(dir, name)
		ea, inA := a[name]
		eb, inB := b[name]
		if inA && inB && ea == eb {
			continue
		}
		var ma, mb string
		if inA {
			if ma, err = canonMode(ea.mode); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", full, err)
			}
		}
		if inB {
			if mb, err = canonMode(eb.mode); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", full, err)
			}
		}
		aTree, bTree := ma == "40000", mb == "40000"
		switch {
		case aTree && bTree:
			sub = append(sub, treePair{dir: full, a: ea.oid, b: eb.oid})
			continue
		case aTree:
			sub = append(sub, treePair{dir: full, a: ea.oid})
		case bTree:
			sub = append(sub, treePair{dir: full, b: eb.oid})
		}
		r := rawRecord{path: full}
		if inA && !aTree {
			r.oldMode, r.oldOID = ma, ea.oid
		}
		if inB && !bTree {
			r.newMode, r.newOID = mb, eb.oid
		}
		if r.oldOID != "" || r.newOID != "" {
			recs = append(recs, r)
		}
	}
	return sub, recs, nil
}

// canonMode is the mode diff-tree shows for a tree entry's: a regular
// file is 100644 or, with any execute bit, 100755.
func canonMode(mode string) (string, error) {
	m, err := strconv.ParseUint(mode, 8, 32)
	if err != nil {
		return "", fmt.Errorf("tree entry mode %q", mode)
	}
	switch m & 0o170000 {
	case 0o040000:
		return "40000", nil
	case 0o100000:
		if m&0o111 != 0 {
			return "100755", nil
		}
		return "100644", nil
	case 0o120000:
		return "120000", nil
	case 0o160000:
		return "160000", nil
	}
	return "", fmt.Errorf("tree entry mode %q", mode)
}

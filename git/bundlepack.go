package git

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1" //nolint:gosec // git's object names are SHA-1 (a repository in SHA-1 format)
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// The fleet's packs without a git process where one is not needed: a
// worker's result is a handful of new objects (the blobs and trees its
// `git add` and `write-tree` wrote into a private object directory, and
// the commit muster makes itself), written here as a bundle of whole
// objects; a received bundle goes to `git unpack-objects --strict` (or
// `index-pack --strict` when it is large) instead of `git bundle
// unbundle` and its child `index-pack`; and the change a returned commit
// makes is read through the long-lived helper instead of `diff-tree`.

// unpackLimit is git's transfer.unpackLimit: a pack with fewer objects
// is exploded into loose objects, a larger one kept as a pack.
const unpackLimit = 100

// storePack stores the objects of the pack that follows a bundle's
// header (at offset) in dir's repository: every object is checked
// (content and links, against the pack and the repository) before it is
// written, and a thin pack's bases must be in the repository.
func storePack(ctx context.Context, dir, bundle string, offset int64) error {
	f, err := os.Open(bundle)
	if err != nil {
		return err
	}
	defer f.Close()
	var hdr [12]byte
	if _, err := f.ReadAt(hdr[:], offset); err != nil || string(hdr[:4]) != "PACK" {
		return fmt.Errorf("bundle %s: no pack after its header", filepath.Base(bundle))
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	c := safeCmd(dir, "unpack-objects", "-q", "--strict")
	if binary.BigEndian.Uint32(hdr[8:]) >= unpackLimit {
		c = safeCmd(dir, "index-pack", "--stdin", "--fix-thin", "--strict")
	}
	return stream(ctx, c, bufio.NewReaderSize(f, 64<<10), io.Discard)
}

// packEntry is one entry of a tree object.
type packEntry struct {
	mode, name, oid string
}

func (e packEntry) isTree() bool { return e.mode == "40000" }

// byName maps a tree's entries by name.
func byName(es []packEntry) map[string]packEntry {
	m := make(map[string]packEntry, len(es))
	for _, e := range es {
		m[e.name] = e
	}
	return m
}

// parseTree reads a tree object's entries, in its order (eachEntry).
func parseTree(data []byte, oidLen int) ([]packEntry, error) {
	var out []packEntry
	err := eachEntry(data, oidLen, func(mode, name, oid string) error {
		out = append(out, packEntry{mode: mode, name: name, oid: oid})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// treeDiff lists, as `diff-tree -r --no-renames` does, the paths whose
// entry differs between the trees of two commits (changed: present in
// to; deleted: only in from), reading the trees through b.
func treeDiff(ctx context.Context, b *Batch, from, to string) (changed, deleted []string, err error) {
	ft, _, err := commitInfo(ctx, b, "", from)
	if err != nil {
		return nil, nil, err
	}
	tt, _, err := commitInfo(ctx, b, "", to)
	if err != nil {
		return nil, nil, err
	}
	d := &differ{ctx: ctx, b: b, oidLen: len(from) / 2}
	if err := d.diff("", ft, tt); err != nil {
		return nil, nil, err
	}
	return d.changed, d.deleted, nil
}

type differ struct {
	ctx              context.Context
	b                *Batch
	oidLen           int
	changed, deleted []string
}

func (d *differ) tree(oid string) ([]packEntry, error) {
	if oid == "" {
		return nil, nil
	}
	info, data, err := d.b.Contents(d.ctx, oid)
	if err != nil {
		return nil, err
	}
	if info.Type != "tree" {
		return nil, fmt.Errorf("%s is a %s, not a tree", oid, info.Type)
	}
	return parseTree(data, d.oidLen)
}

// diff compares two trees ("" is an empty one) under prefix.
func (d *differ) diff(prefix, from, to string) error {
	if from == to {
		return nil
	}
	fe, err := d.tree(from)
	if err != nil {
		return err
	}
	te, err := d.tree(to)
	if err != nil {
		return err
	}
	left := byName(fe)
	for _, t := range te {
		f, ok := left[t.name]
		delete(left, t.name)
		if ok && f.mode == t.mode && f.oid == t.oid {
			continue
		}
		if err := d.entry(prefix+t.name, f, ok, t, true); err != nil {
			return err
		}
	}
	for _, f := range left {
		if err := d.entry(prefix+f.name, f, true, packEntry{}, false); err != nil {
			return err
		}
	}
	return nil
}

// entry records one differing name: f (if inFrom) in from, t (if inTo)
// in to.
func (d *differ) entry(path string, f packEntry, inFrom bool, t packEntry, inTo bool) error {
	fTree, tTree := inFrom && f.isTree(), inTo && t.isTree()
	var ftOID, ttOID string
	if fTree {
		ftOID = f.oid
	}
	if tTree {
		ttOID = t.oid
	}
	if fTree || tTree {
		if err := d.diff(path+"/", ftOID, ttOID); err != nil {
			return err
		}
	}
	if inFrom && !fTree && (!inTo || tTree) {
		d.deleted = append(d.deleted, path)
	}
	if inTo && !tTree {
		d.changed = append(d.changed, path)
	}
	return nil
}

// resultCommit is the body of the commit muster makes of a worker's
// result (commitOf's, without a git process).
func resultCommit(tree, parent string) []byte {
	return []byte("tree " + tree + "\nparent " + parent +
		"\nauthor muster <muster@localhost> 0 +0000\ncommitter muster <muster@localhost> 0 +0000\n\nmuster fleet result\n")
}

// objectID is the SHA-1 name of an object.
func objectID(typ string, body []byte) string {
	h := sha1.New() //nolint:gosec // git's object names
	fmt.Fprintf(h, "%s %d\x00", typ, len(body))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

var packTypes = map[string]byte{"commit": 1, "tree": 2, "blob": 3, "tag": 4}

// packRefDelta is the pack type of a delta against an object named by id.
const packRefDelta = 7

// looseObject reads a loose object file: its type and contents.
func looseObject(path string) (string, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	z, err := zlib.NewReader(bufio.NewReader(f))
	if err != nil {
		return "", nil, err
	}
	defer z.Close()
	raw, err := io.ReadAll(z)
	if err != nil {
		return "", nil, err
	}
	hdr, body, ok := bytes.Cut(raw, []byte{0})
	typ, size, _ := strings.Cut(string(hdr), " ")
	if n, err := strconv.Atoi(size); !ok || err != nil || n != len(body) || packTypes[typ] == 0 {
		return "", nil, fmt.Errorf("loose object %s: malformed", filepath.Base(path))
	}
	return typ, body, nil
}

// writeObjectsBundle writes to out a bundle of tip whose prerequisite is
// prereq (start) and whose pack holds the commit (commitBody, named tip,
// of tree) and every loose object in objects. An object at a path where
// start's tree (read through b) has one of the same kind is a delta
// against it (its common head and tail copied): a tree of a large
// directory with one entry changed travels as that entry.
func writeObjectsBundle(ctx context.Context, b *Batch, out, tip, prereq, tree, startTree string, commitBody []byte, objects string) error {
	paths, err := looseObjects(objects)
	if err != nil {
		return err
	}
	bases := map[string]string{} // new object -> start's object at its path
	if b != nil && startTree != "" {
		if err := deltaBases(ctx, b, paths, tree, startTree, bases); err != nil {
			return err
		}
	}
	oids := make([]string, 0, len(paths))
	for oid := range paths {
		oids = append(oids, oid)
	}
	sort.Strings(oids)
	return writePackBundle(out, tip, prereq, len(paths)+1, func(pw *packWriter) error {
		if err := pw.object("commit", commitBody); err != nil {
			return err
		}
		for _, oid := range oids {
			typ, body, err := looseObject(paths[oid])
			if err != nil {
				return err
			}
			if err := pw.objectOrDelta(ctx, b, typ, body, bases[oid]); err != nil {
				return err
			}
		}
		return nil
	})
}

// writePackBundle writes to out the bundle of tip (prerequisite prereq)
// whose pack holds the n objects fill writes.
func writePackBundle(out, tip, prereq string, n int, fill func(*packWriter) error) error {
	return createBundle(out, tip, []string{prereq}, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		pw := &packWriter{w: bw, h: sha1.New()} //nolint:gosec // the pack's trailer is SHA-1
		pw.header(uint32(n))
		if err := fill(pw); err != nil {
			return err
		}
		if _, err := bw.Write(pw.h.Sum(nil)); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// looseObjects maps the name of every loose object in objects to its file.
func looseObjects(objects string) (map[string]string, error) {
	out := map[string]string{}
	dirs, err := os.ReadDir(objects)
	if err != nil {
		return nil, err
	}
	for _, dd := range dirs {
		if len(dd.Name()) != 2 || !dd.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(objects, dd.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if oid := dd.Name() + f.Name(); isObjectID(oid) {
				out[oid] = filepath.Join(objects, dd.Name(), f.Name())
			}
		}
	}
	return out, nil
}

// deltaBases pairs each new object under tree (those in fresh) with the
// object of the same kind at its path under startTree.
func deltaBases(ctx context.Context, b *Batch, fresh map[string]string, tree, startTree string, bases map[string]string) error {
	bases[tree] = startTree
	_, body, err := looseObject(fresh[tree])
	if err != nil {
		return nil // the root tree is not new: nothing under it is
	}
	te, err := parseTree(body, len(tree)/2)
	if err != nil {
		return err
	}
	_, old, err := b.Contents(ctx, startTree)
	if err != nil {
		return err
	}
	oe, err := parseTree(old, len(tree)/2)
	if err != nil {
		return err
	}
	was := byName(oe)
	for _, e := range te {
		o, ok := was[e.name]
		if _, isNew := fresh[e.oid]; !isNew || !ok || o.isTree() != e.isTree() || e.mode == "160000" || o.mode == "160000" {
			continue
		}
		if !e.isTree() {
			bases[e.oid] = o.oid
			continue
		}
		if err := deltaBases(ctx, b, fresh, e.oid, o.oid, bases); err != nil {
			return err
		}
	}
	return nil
}

// headTailDelta is a git delta that makes target from base: the bytes
// they share at the start and at the end copied, the middle inserted.
func headTailDelta(base, target []byte) []byte {
	head := 0
	for head < len(base) && head < len(target) && base[head] == target[head] {
		head++
	}
	tail := 0
	for tail < len(base)-head && tail < len(target)-head && base[len(base)-1-tail] == target[len(target)-1-tail] {
		tail++
	}
	d := binary.AppendUvarint(nil, uint64(len(base)))
	d = binary.AppendUvarint(d, uint64(len(target)))
	d = deltaCopy(d, 0, head)
	for mid := target[head : len(target)-tail]; len(mid) > 0; {
		n := min(len(mid), 127)
		d = append(append(d, byte(n)), mid[:n]...)
		mid = mid[n:]
	}
	return deltaCopy(d, len(base)-tail, tail)
}

// deltaCopy appends copy instructions of base[off:off+n].
func deltaCopy(d []byte, off, n int) []byte {
	for n > 0 {
		size := min(n, 0xffffff)
		op := byte(0x80)
		var args []byte
		for i := range 4 {
			if v := byte(off >> (8 * i)); v != 0 {
				op |= 1 << i
				args = append(args, v)
			}
		}
		for i := range 3 {
			if v := byte(size >> (8 * i)); v != 0 {
				op |= 0x10 << i
				args = append(args, v)
			}
		}
		d = append(append(d, op), args...)
		off, n = off+size, n-size
	}
	return d
}

// packWriter writes a version 2 pack of whole objects, hashing as it goes.
type packWriter struct {
	w   io.Writer
	h   hash.Hash
	err error
}

func (p *packWriter) write(b []byte) {
	if p.err != nil {
		return
	}
	p.h.Write(b)
	_, p.err = p.w.Write(b)
}

func (p *packWriter) header(n uint32) {
	var b [12]byte
	copy(b[:], "PACK")
	binary.BigEndian.PutUint32(b[4:], 2)
	binary.BigEndian.PutUint32(b[8:], n)
	p.write(b[:])
}

// object writes one entry: the type and size header, then the zlib
// stream of the contents.
func (p *packWriter) object(typ string, body []byte) error {
	return p.entry(packTypes[typ], nil, body)
}

// objectOrDelta writes body as a delta against base (an object of the
// receiver's, read through b) when that is under half its size, else
// whole.
func (p *packWriter) objectOrDelta(ctx context.Context, b *Batch, typ string, body []byte, base string) error {
	if base != "" {
		if _, old, err := b.Contents(ctx, base); err == nil {
			if delta := headTailDelta(old, body); len(delta) < len(body)/2 {
				return p.refDelta(base, delta)
			}
		}
	}
	return p.object(typ, body)
}

// refDelta writes a delta against base (an object the receiver has).
func (p *packWriter) refDelta(base string, delta []byte) error {
	raw, err := hex.DecodeString(base)
	if err != nil {
		return err
	}
	return p.entry(packRefDelta, raw, delta)
}

func (p *packWriter) entry(typ byte, base, body []byte) error {
	size := uint64(len(body))
	hdr := []byte{typ<<4 | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		hdr[len(hdr)-1] |= 0x80
		hdr = append(hdr, byte(size&0x7f))
		size >>= 7
	}
	p.write(hdr)
	p.write(base)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	if _, err := zw.Write(body); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	p.write(z.Bytes())
	return p.err
}

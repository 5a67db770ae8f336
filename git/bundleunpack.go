package git

import (
	"bufio"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// A fleet worker's store takes the start bundles its orchestrator sends
// without a git process when they are of the kind chainBundle writes
// (whole objects, and deltas against objects named by id): each object
// is written loose, named by the hash of what it holds. The orchestrator
// is the one sender a worker takes code from (only it may write where a
// worker reads bundles), so this path checks names, not content; a pack
// of another kind (a first bundle, by pack-objects) goes to git.

var packTypeNames = map[byte]string{1: "commit", 2: "tree", 3: "blob", 4: "tag"}

// errNotOurs says a pack holds entries only git reads (offset deltas).
var errNotOurs = errors.New("a pack git must read")

// receiveLoose writes the objects of the pack at offset of bundle into
// the store dir as loose objects, reading delta bases it does not hold
// through b. ok is false, and git must store the pack, when it is large
// or of another kind.
func receiveLoose(ctx context.Context, b *Batch, dir, bundle string, offset int64) (ok bool, err error) {
	f, err := os.Open(bundle)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return false, err
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil || string(hdr[:4]) != "PACK" || binary.BigEndian.Uint32(hdr[4:]) != 2 {
		return false, nil
	}
	n := binary.BigEndian.Uint32(hdr[8:])
	if n >= unpackLimit {
		return false, nil
	}
	got := map[string]looseObj{} // this pack's objects, as delta bases
	objects := filepath.Join(dir, "objects")
	for range n {
		typ, body, err := readEntry(ctx, r, b, got)
		if errors.Is(err, errNotOurs) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		oid, err := writeLoose(objects, "sha1", typ, body)
		if err != nil {
			return false, err
		}
		got[oid] = looseObj{typ, body}
	}
	return true, nil
}

type looseObj struct {
	typ  string
	body []byte
}

// readEntry reads one pack entry: a whole object, or a delta against an
// object named by id (of this pack, or read through b).
func readEntry(ctx context.Context, r *bufio.Reader, b *Batch, got map[string]looseObj) (string, []byte, error) {
	c, err := r.ReadByte()
	if err != nil {
		return "", nil, err
	}
	kind, size, shift := (c>>4)&7, uint64(c&0x0f), 4
	for c&0x80 != 0 {
		if c, err = r.ReadByte(); err != nil {
			return "", nil, err
		}
		size |= uint64(c&0x7f) << shift
		shift += 7
	}
	var base []byte
	if kind == packRefDelta {
		base = make([]byte, 20)
		if _, err := io.ReadFull(r, base); err != nil {
			return "", nil, err
		}
	} else if packTypeNames[kind] == "" {
		return "", nil, errNotOurs
	}
	z, err := zlib.NewReader(r)
	if err != nil {
		return "", nil, err
	}
	data, err := io.ReadAll(io.LimitReader(z, int64(size)+1))
	if err == nil {
		err = z.Close()
	}
	if err != nil || uint64(len(data)) != size {
		return "", nil, fmt.Errorf("pack entry: %d bytes, want %d (%w)", len(data), size, err)
	}
	if base == nil {
		return packTypeNames[kind], data, nil
	}
	id := hex.EncodeToString(base)
	bo, ok := got[id]
	if !ok {
		info, body, err := b.Contents(ctx, id)
		if err != nil {
			return "", nil, fmt.Errorf("delta base %s: %w", id, err)
		}
		bo = looseObj{info.Type, body}
	}
	body, err := applyDelta(bo.body, data)
	return bo.typ, body, err
}

// applyDelta makes the object a git delta describes from its base.
func applyDelta(base, delta []byte) ([]byte, error) {
	bad := errors.New("malformed delta")
	src, n := binary.Uvarint(delta)
	if n <= 0 || src != uint64(len(base)) {
		return nil, bad
	}
	delta = delta[n:]
	dst, n := binary.Uvarint(delta)
	if n <= 0 || dst > 1<<32 {
		return nil, bad
	}
	delta = delta[n:]
	out := make([]byte, 0, dst)
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		if op&0x80 == 0 {
			if op == 0 || int(op) > len(delta) {
				return nil, bad
			}
			out = append(out, delta[:op]...)
			delta = delta[op:]
			continue
		}
		var off, size uint64
		for i := range 7 {
			if op&(1<<i) == 0 {
				continue
			}
			if len(delta) == 0 {
				return nil, bad
			}
			if i < 4 {
				off |= uint64(delta[0]) << (8 * i)
			} else {
				size |= uint64(delta[0]) << (8 * (i - 4))
			}
			delta = delta[1:]
		}
		if size == 0 {
			size = 0x10000
		}
		if off+size > uint64(len(base)) {
			return nil, bad
		}
		out = append(out, base[off:off+size]...)
	}
	if uint64(len(out)) != dst {
		return nil, bad
	}
	return out, nil
}

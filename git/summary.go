package git

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"

	"github.com/muster-run/muster"
)

// Limits of counting lines in process; beyond them the patch is asked
// of git and counted (muster.PatchStat).
const (
	maxCountBytes = 8 << 20 // of both sides of every file together
	maxCountEdits = 4096    // lines added and deleted in one file
)

// Summary returns each file's added and deleted lines in the change the
// last Change call computed in dir (or computes it) and a digest of its
// raw records (equal for equal changes). Where the change was found
// without git (rawInProcess), the lines are counted here, as git counts
// them (binary files count none); else, or beyond the limits, they are
// counted in the patch.
func (w *Workspace) Summary(ctx context.Context, dir, base string) (muster.ChangeSummary, error) {
	s, err := w.lookup(ctx, dir)
	if err != nil {
		return muster.ChangeSummary{}, err
	}
	defer s.mu.Unlock()
	snap, err := w.snapshotFor(ctx, s, base)
	if err != nil {
		return muster.ChangeSummary{}, err
	}
	sum := muster.ChangeSummary{Digest: fmt.Sprintf("%x", sha256.Sum256(snap.raw))}
	if snap.recs != nil {
		if files, ok := w.countLines(ctx, snap.recs); ok {
			sum.Files = files
			return sum, nil
		}
	}
	patch, err := w.patch(ctx, dir, snap)
	if err != nil {
		return muster.ChangeSummary{}, err
	}
	sum.Files = muster.PatchStat(patch)
	return sum, nil
}

// countLines counts each record's added and deleted lines, reading both
// sides in one round trip; ok is false beyond the limits.
func (w *Workspace) countLines(ctx context.Context, recs []rawRecord) ([]muster.FileStat, bool) {
	var names []string
	for _, r := range recs {
		for _, id := range []string{r.oldOID, r.newOID} {
			if id != "" {
				names = append(names, id)
			}
		}
	}
	infos, err := w.batch.InfoMany(ctx, names)
	if err != nil {
		return nil, false
	}
	total := int64(0)
	for _, in := range infos {
		total += in.Size
	}
	if total > maxCountBytes {
		return nil, false
	}
	_, data, err := w.batch.doMany(ctx, "contents", names)
	if err != nil {
		return nil, false
	}
	blobs := map[string][]byte{}
	for i, n := range names {
		blobs[n] = data[i]
	}
	files := make([]muster.FileStat, 0, len(recs))
	for _, r := range recs {
		before, after := blobs[r.oldOID], blobs[r.newOID]
		fs := muster.FileStat{Path: quotePath(r.path)}
		if !isBinary(before) && !isBinary(after) {
			add, del, ok := lineEdits(before, after, maxCountEdits)
			if !ok {
				return nil, false
			}
			fs.Added, fs.Deleted = add, del
		}
		files = append(files, fs)
	}
	return files, true
}

// isBinary is git's test: a NUL in the first 8000 bytes.
func isBinary(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// lineEdits counts the lines a shortest edit from a to b adds and
// deletes (Myers' O(ND) algorithm over whole lines, a last line without
// its newline a line of its own, as in git's patches; any shortest edit
// has the same counts); ok is false when it takes more than most edits.
func lineEdits(a, b []byte, most int) (add, del int, ok bool) {
	x, y := lines(a), lines(b)
	for len(x) > 0 && len(y) > 0 && x[0] == y[0] {
		x, y = x[1:], y[1:]
	}
	for len(x) > 0 && len(y) > 0 && x[len(x)-1] == y[len(y)-1] {
		x, y = x[:len(x)-1], y[:len(y)-1]
	}
	n, m := len(x), len(y)
	d, ok := editDistance(x, y, most)
	if !ok {
		return 0, 0, false
	}
	// d = add + del and m - n = add - del.
	return (d + m - n) / 2, (d - m + n) / 2, true
}

// editDistance is the least number of lines to insert and delete to
// turn x into y, if at most most.
func editDistance(x, y []string, most int) (int, bool) {
	n, m := len(x), len(y)
	if n == 0 || m == 0 {
		return n + m, n+m <= most
	}
	limit := min(n+m, most)
	off := limit + 1
	v := make([]int, 2*limit+3)
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var i int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				i = v[off+k+1]
			} else {
				i = v[off+k-1] + 1
			}
			j := i - k
			for i < n && j < m && x[i] == y[j] {
				i, j = i+1, j+1
			}
			v[off+k] = i
			if i >= n && j >= m {
				return d, true
			}
		}
	}
	return 0, false
}

// lines splits b after each newline; a last line without one is a line.
func lines(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i+1]))
		b = b[i+1:]
	}
	return out
}

// quotePath is a path as git's patches name it: in double quotes with C
// escapes when it holds a control character, a quote, a backslash or a
// byte above ASCII (core.quotePath), as it is otherwise. A path shown in
// a terminal (muster logs) so never carries an escape sequence.
func quotePath(p string) string {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return quoteC(p)
		}
	}
	return p
}

func quoteC(p string) string {
	b := []byte{'"'}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\a':
			b = append(b, `\a`...)
		case '\b':
			b = append(b, `\b`...)
		case '\t':
			b = append(b, `\t`...)
		case '\n':
			b = append(b, `\n`...)
		case '\v':
			b = append(b, `\v`...)
		case '\f':
			b = append(b, `\f`...)
		case '\r':
			b = append(b, `\r`...)
		default:
			if c < 0x20 || c >= 0x7f {
				b = append(b, '\\')
				b = append(b, strconv.FormatUint(uint64(c)|0o1000, 8)[1:]...)
			} else {
				b = append(b, c)
			}
		}
	}
	return string(append(b, '"'))
}

package fleet

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
)

// A worker's result travels on its own subject, never through a store
// other workers may write: a bundle up to one message's worth inside the
// result report, a larger one as chunk reports before it
// (muster.ev.<run>.<worker>.<job>, which the server lets only that
// worker's credentials publish on). The orchestrator takes the chunks of
// the lease it accepted only, in order, and the result names their count
// and digest.

// maxResult bounds a result's bundle (a change, not a repository).
const maxResult = 64 << 20

// chunkSize is the most bundle bytes one report carries: inlineMax, or
// less when the server's max_payload is small (a report is JSON, so the
// bytes grow by a third, plus the report's other fields).
func chunkSize(maxPayload int64) int {
	n := int64(inlineMax)
	if room := (maxPayload - 8<<10) * 3 / 4; maxPayload > 0 && room < n {
		n = max(room, 4<<10)
	}
	return int(n)
}

// sendBundle puts the bundle at path into the result out: inside it when
// it fits one report, else as chunk reports sent first.
func (w *Worker) sendBundle(path string, out *Report, rep func(Report) error) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	size := chunkSize(w.o.Conn.NC.MaxPayload())
	if len(b) <= size {
		out.BundleData = b
		return nil
	}
	if len(b) > maxResult {
		return fmt.Errorf("the change's bundle is %d MiB, over the %d MiB a result may hold", len(b)>>20, maxResult>>20)
	}
	n := 0
	for off := 0; off < len(b); off += size {
		n++
		if err := rep(Report{Kind: RepChunk, Seq: n, BundleData: b[off:min(off+size, len(b))]}); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(b)
	out.Chunks, out.BundleSum = n, hex.EncodeToString(sum[:])
	return nil
}

// chunks is the result bundle being received for a job: the chunks of
// one lease, in order, into a file of the orchestrator's scratch.
type chunks struct {
	holder string
	path   string
	f      *os.File
	n      int
	size   int
	sum    hash.Hash
	broken error
}

// chunk takes one chunk report of the lease holder who.
func (d *Dispatcher) chunk(p *pending, who string, rep *Report) {
	c := p.chunks
	if c == nil || c.holder != who {
		p.dropChunks() // a new lease: what an earlier one sent is not its
		c = &chunks{holder: who, sum: sha256.New(), path: filepath.Join(d.scratch, "r-"+randomID()+".bundle")}
		p.chunks = c
		if c.f, c.broken = os.OpenFile(c.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); c.broken != nil {
			return
		}
	}
	switch {
	case c.broken != nil || rep.Seq <= c.n:
		return // broken already, or a chunk sent again: taken once
	case rep.Seq != c.n+1:
		c.broken = fmt.Errorf("chunk %d came after chunk %d", rep.Seq, c.n)
		return
	case c.size+len(rep.BundleData) > maxResult:
		c.broken = fmt.Errorf("the result's bundle is over %d MiB", maxResult>>20)
		return
	}
	if _, err := c.f.Write(rep.BundleData); err != nil {
		c.broken = err
		return
	}
	c.sum.Write(rep.BundleData)
	c.n, c.size = c.n+1, c.size+len(rep.BundleData)
}

// chunked returns the file of the result's chunks, once they are all
// there and their digest is the result's.
func (p *pending) chunked(rep *Report) (string, error) {
	c := p.chunks
	switch {
	case c == nil || c.holder != rep.holder():
		return "", errors.New("none of the result's chunks came from its lease")
	case c.broken != nil:
		return "", fmt.Errorf("the result's chunks: %w", c.broken)
	case c.n != rep.Chunks:
		return "", fmt.Errorf("%d of the result's %d chunks came", c.n, rep.Chunks)
	case subtle.ConstantTimeCompare([]byte(hex.EncodeToString(c.sum.Sum(nil))), []byte(rep.BundleSum)) != 1:
		return "", errors.New("the result's chunks do not hash to its digest")
	}
	if err := c.f.Close(); err != nil {
		return "", err
	}
	c.f = nil
	return c.path, nil
}

// dropChunks removes the chunks received so far.
func (p *pending) dropChunks() {
	if c := p.chunks; c != nil {
		if c.f != nil {
			c.f.Close()
		}
		os.Remove(c.path)
		p.chunks = nil
	}
}

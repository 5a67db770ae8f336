package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// TestChunksOfTheLeaseOnly: a result's chunks are taken from the lease
// it comes under, in order and once; a gap, a chunk of another lease or
// a digest that does not match refuses the result.
func TestChunksOfTheLeaseOnly(t *testing.T) {
	d := &Dispatcher{scratch: t.TempDir()}
	whole := []byte("0123456789")
	sum := sha256.Sum256(whole)
	result := Report{Kind: RepResult, Worker: "w1", Msg: 7, Delivery: 1, Chunks: 2, BundleSum: hex.EncodeToString(sum[:])}
	who := result.holder()
	chunk := func(p *pending, who string, seq int, data string) {
		d.chunk(p, who, &Report{Kind: RepChunk, Seq: seq, BundleData: []byte(data)})
	}

	p := &pending{}
	chunk(p, who, 1, "01234")
	chunk(p, who, 1, "01234") // sent again: taken once
	chunk(p, who, 2, "56789")
	path, err := p.chunked(&result)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(whole) {
		t.Fatalf("assembled %q", b)
	}
	p.dropChunks()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("the chunks' file outlived the job")
	}

	p = &pending{}
	chunk(p, who, 2, "56789")
	if _, err := p.chunked(&result); err == nil || !strings.Contains(err.Error(), "came after") {
		t.Errorf("a gap: %v", err)
	}
	p.dropChunks()

	p = &pending{}
	chunk(p, "w2/7.2", 1, "01234")
	chunk(p, "w2/7.2", 2, "56789")
	if _, err := p.chunked(&result); err == nil {
		t.Error("another lease's chunks were taken")
	}
	p.dropChunks()

	p = &pending{}
	chunk(p, who, 1, "01234")
	chunk(p, who, 2, "5678X")
	if _, err := p.chunked(&result); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("a forged digest: %v", err)
	}
	p.dropChunks()
}

func TestChunkSize(t *testing.T) {
	if n := chunkSize(8 << 20); n != inlineMax {
		t.Errorf("8 MiB payload: %d", n)
	}
	if n := chunkSize(64 << 10); n*4/3+8<<10 > 64<<10 && n != 4<<10 {
		t.Errorf("64 KiB payload: chunk %d does not fit", n)
	}
}

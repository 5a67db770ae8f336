package receipt

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkSeal100k seals a journal of 100,000 lines (hash chain, line
// digests and the fold of outcomes).
func BenchmarkSeal100k(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"seq":1,"type":"RunStarted","run":"r","base":"b","branch":"muster/r"}` + "\n")
	for i := 2; i <= 100_000; i++ {
		fmt.Fprintf(&sb, `{"seq":%d,"time":"2026-11-29T12:00:00Z","type":"TokensUsed","task":"t%d","input_tokens":1200,"output_tokens":300,"cost_micros":2100}`+"\n", i, i%1000)
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Seal(data, Input{Now: time.Unix(0, 0)}); err != nil {
			b.Fatal(err)
		}
	}
}

package fleet

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkPublish: one JetStream publish to the events stream, acked,
// with every write synced to disk (fleet serve) and with JetStream's
// default (a sync every two minutes), on this machine's disk:
//
//	go test ./fleet -run '^$' -bench BenchmarkPublish -benchtime 2000x
func BenchmarkPublish(b *testing.B) {
	for _, c := range []struct {
		name string
		lazy bool
	}{{"sync_always", false}, {"default", true}} {
		b.Run(c.name, func(b *testing.B) {
			srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(b.TempDir(), "js"), lazySync: c.lazy})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			ctx := context.Background()
			conn, err := Connect(ctx, srv.URL(), "bench", Auth{Creds: creds(b, srv, "bench", UserOptions{Orchestrator: true})}, true)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			data := make([]byte, 512)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := conn.JS.Publish(ctx, eventSubject("run", "w", "job"), data, jetstream.WithExpectStream(EventsStream)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

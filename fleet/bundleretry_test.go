package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/muster-run/muster"
)

// emptyHost is a worker's git side that holds nothing.
type emptyHost struct{}

func (emptyHost) Has(context.Context, string, string) bool { return false }
func (emptyHost) Tips(context.Context, string) []string    { return nil }
func (emptyHost) Receive(context.Context, string, string) (string, error) {
	return "", nil
}
func (emptyHost) Checkout(context.Context, string, string, int, string) (string, error) {
	return "", nil
}
func (emptyHost) Result(context.Context, string, string, int, string, string) (string, bool, error) {
	return "", false, nil
}

// bundleWorker serves a fleet in which an orchestrator answers the
// bundle asks of run "rr" with answer (nil: no orchestrator listens) and
// returns a worker of it.
func bundleWorker(t *testing.T, answer nats.MsgHandler) *Worker {
	t.Helper()
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "js")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ctx := context.Background()
	if answer != nil {
		orch, err := Connect(ctx, srv.URL(), "orch", Auth{Creds: creds(t, srv, "orch", UserOptions{Orchestrator: true})}, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(orch.Close)
		sub, err := orch.NC.Subscribe(bundleSubject(token("rr")), answer)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
		if err := orch.NC.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	wc, err := Connect(ctx, srv.URL(), "w1", Auth{Creds: creds(t, srv, "w1", UserOptions{Executors: []string{"sh"}})}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wc.Close)
	w, err := NewWorker(WorkerOptions{Name: "w1", Conn: wc, Specs: []*muster.ExecutorSpec{{Name: "sh"}}, Host: emptyHost{}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// fetchRR asks for the start bundle of a job of run "rr", within 20 s.
func fetchRR(t *testing.T, w *Worker) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	job := &Job{Run: "rr", ID: "j1", Repo: strings.Repeat("a", 40), Start: strings.Repeat("b", 40)}
	return w.fetchStart(ctx, job, t.TempDir())
}

// A bundle request the orchestrator took and never answered (killed
// with kill -9 right then) is asked again after bundleTry, so the
// orchestrator resumed in its place answers it; the job waited two
// minutes for the dead one, holding the worker's clone.
func TestBundleRequestAskedAgain(t *testing.T) {
	defer func(old time.Duration) { bundleTry = old }(bundleTry)
	bundleTry = 200 * time.Millisecond
	var asked atomic.Int32
	w := bundleWorker(t, func(m *nats.Msg) {
		if asked.Add(1) == 1 {
			return // the orchestrator killed after it took the request
		}
		b, _ := json.Marshal(BundleReply{Error: "answered by the resumed orchestrator"})
		_ = m.Respond(b)
	})
	if err := fetchRR(t, w); err == nil || !strings.Contains(err.Error(), "answered by the resumed orchestrator") {
		t.Fatalf("fetchStart = %v, want the second orchestrator's answer", err)
	}
	if n := asked.Load(); n != 2 {
		t.Fatalf("asked %d times, want twice", n)
	}
}

// An orchestrator slower than bundleTry is not asked in vain: its answer
// to the first ask is taken, though the worker asked again meanwhile.
func TestBundleRequestTakesALateAnswer(t *testing.T) {
	defer func(old time.Duration) { bundleTry = old }(bundleTry)
	bundleTry = 100 * time.Millisecond
	var asked atomic.Int32
	w := bundleWorker(t, func(m *nats.Msg) {
		if asked.Add(1) > 1 {
			return // busy with the first
		}
		go func() {
			time.Sleep(450 * time.Millisecond) // a big bundle
			b, _ := json.Marshal(BundleReply{Error: "the first answer, late"})
			_ = m.Respond(b)
		}()
	})
	if err := fetchRR(t, w); err == nil || !strings.Contains(err.Error(), "the first answer, late") {
		t.Fatalf("fetchStart = %v, want the first ask's late answer", err)
	}
	if n := asked.Load(); n < 2 {
		t.Fatalf("asked %d times, want it asked again while waiting", n)
	}
}

// With no orchestrator at all the ask fails at once, as before.
func TestBundleRequestWithoutOrchestratorFailsAtOnce(t *testing.T) {
	if err := fetchRR(t, bundleWorker(t, nil)); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("fetchStart = %v, want no responders", err)
	}
}

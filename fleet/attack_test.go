package fleet

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/muster-run/muster"
)

// TestWorkerCannotReadOthersReplies: a worker's credentials let it
// subscribe only to its own inboxes. With `_INBOX.>` open to every
// worker, one that serves only "sh" read the "codex" jobs the server
// delivered to another worker (a pull consumer's messages go to the
// puller's inbox), and every answer the orchestrator got from the server
// (leases, result bundles). Its own pulls and requests still work.
func TestWorkerCannotReadOthersReplies(t *testing.T) {
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "js")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	orch, err := Connect(ctx, srv.URL(), "orch", Auth{Creds: creds(t, srv, "orch", UserOptions{Orchestrator: true})}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer orch.Close()
	spy, err := Connect(ctx, srv.URL(), "w1", Auth{Creds: creds(t, srv, "w1", UserOptions{Executors: []string{"sh"}})}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	honest, err := Connect(ctx, srv.URL(), "w2", Auth{Creds: creds(t, srv, "w2", UserOptions{Executors: []string{"codex"}})}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer honest.Close()

	var mu sync.Mutex
	var sniffed []string
	for _, subj := range []string{"_INBOX.>", ">"} {
		if _, err := spy.NC.Subscribe(subj, func(m *nats.Msg) {
			mu.Lock()
			sniffed = append(sniffed, string(m.Data))
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	_ = spy.NC.Flush()

	pull := func(c *Conn, executor string) string {
		t.Helper()
		cons, err := c.JS.CreateOrUpdateConsumer(ctx, TasksStream, jetstream.ConsumerConfig{Durable: consumerName(executor), FilterSubject: taskFilter(executor), AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatalf("%s's consumer: %v", executor, err)
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			t.Fatalf("%s fetch: %v", executor, err)
		}
		for m := range batch.Messages() {
			_ = m.Ack()
			return string(m.Data())
		}
		t.Fatalf("%s: no task delivered (%v)", executor, batch.Error())
		return ""
	}
	secret := "codex-job-secret-prompt"
	if _, err := orch.JS.Publish(ctx, taskSubject("run1", "codex"), []byte(`{"prompt":"`+secret+`"}`)); err != nil {
		t.Fatal(err)
	}
	if got := pull(honest, "codex"); !strings.Contains(got, secret) {
		t.Fatalf("the honest worker got %q", got)
	}
	// The spy's own work still flows through its own inbox.
	if _, err := orch.JS.Publish(ctx, taskSubject("run1", "sh"), []byte(`{"prompt":"mine"}`)); err != nil {
		t.Fatal(err)
	}
	if got := pull(spy, "sh"); !strings.Contains(got, "mine") {
		t.Fatalf("the spy's own task: %q", got)
	}
	_ = spy.NC.Flush()
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sniffed {
		if strings.Contains(s, secret) {
			t.Fatalf("a worker serving sh read a codex job delivered to another worker: %q", s)
		}
	}
}

// TestClaimNeedsTheJobsNonce: a worker that never received a job (it
// serves another executor, so neither its consumer nor its inbox sees
// the job's message) but learnt its id (the events stream's subjects)
// and guessed its message's sequence cannot claim it, or send its
// result: every report must carry the job message's nonce. The claim is
// a Refused record; the holder of the job's message claims it.
func TestClaimNeedsTheJobsNonce(t *testing.T) {
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "js")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	orch, err := Connect(ctx, srv.URL(), "orch", Auth{Creds: creds(t, srv, "orch", UserOptions{Orchestrator: true})}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer orch.Close()
	d := &Dispatcher{conn: orch, run: "run1", lease: time.Minute}
	job := &Job{Run: "run1", ID: "job1", Task: &muster.Task{ID: "a"}, Executor: "codex", Role: muster.RoleCoder, Attempt: 1, Nonce: "the-secret-nonce"}
	p := &pending{job: job, ch: make(chan Report, 4), done: make(chan struct{}), seen: map[string]bool{}, msgSeq: 7, lastSeen: time.Now()}
	var recs []muster.Record
	emit := func(r muster.Record) { recs = append(recs, r) }
	req := &muster.ExecRequest{Task: job.Task, Role: muster.RoleCoder, Attempt: 1}
	forged := Report{Kind: RepClaim, Job: "job1", Task: "a", Attempt: 1, Worker: "spy", Msg: 7, Delivery: 1, sender: "spy", subject: "muster.ev.run1.spy.job1"}
	if _, _, err := d.report(ctx, req, p, &forged, emit); err != nil {
		t.Fatal(err)
	}
	if p.holder != "" {
		t.Fatalf("a worker that never received the job holds its lease: %s", p.holder)
	}
	if len(recs) != 1 || recs[0].Type != muster.RecRefused || !strings.Contains(recs[0].Tool, "nonce") {
		t.Fatalf("records %+v: want one Refused naming the nonce", recs)
	}
	honest := Report{Kind: RepClaim, Job: "job1", Task: "a", Attempt: 1, Worker: "w2", Msg: 7, Delivery: 1, Nonce: "the-secret-nonce", sender: "w2", subject: "muster.ev.run1.w2.job1"}
	if _, _, err := d.report(ctx, req, p, &honest, emit); err != nil {
		t.Fatal(err)
	}
	if p.holder != "w2/7.1" {
		t.Fatalf("the job's deliveree did not get the lease: %q (records %+v)", p.holder, recs)
	}
}

package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/muster-run/muster"
)

// creds issues credentials of srv's account into a file of dir.
func creds(t testing.TB, srv *Server, name string, o UserOptions) string {
	t.Helper()
	b, err := srv.Keys().Issue(name, o)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeAuth: the server admits only holders of its account's
// credentials: an anonymous client and one with another fleet's are
// refused; the keys are the owner's alone.
func TestServeAuth(t *testing.T) {
	store := filepath.Join(t.TempDir(), "js")
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, f := range []string{"operator.nk", "account.nk", "operator.jwt", "account.jwt"} {
		st, err := os.Stat(filepath.Join(store, KeysDir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, st.Mode(), err)
		}
	}
	ctx := context.Background()
	if nc, err := nats.Connect(srv.URL()); err == nil {
		nc.Close()
		t.Fatal("an anonymous client was admitted")
	}
	if _, err := Connect(ctx, srv.URL(), "test", Auth{}, false); err == nil || muster.ErrorCode(err) != muster.CodeInvalid || !strings.Contains(err.Error(), "fleet credentials") {
		t.Fatalf("no credentials: %v", err)
	}
	other, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "other")})
	if err != nil {
		t.Fatal(err)
	}
	foreign := creds(t, other, "orch", UserOptions{Orchestrator: true})
	other.Close()
	if _, err := Connect(ctx, srv.URL(), "test", Auth{Creds: foreign}, false); err == nil || !strings.Contains(err.Error(), "Authorization") {
		t.Fatalf("another fleet's credentials: %v", err)
	}
	c, err := Connect(ctx, srv.URL(), "test", Auth{Creds: creds(t, srv, "orch", UserOptions{Orchestrator: true})}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if si, ok := c.Info(ctx); !ok || !si.SyncAlways {
		t.Errorf("fleet serve's info: %+v %v", si, ok)
	}
	// The orchestrator writes the workers' registrations here, each with
	// its worker's user JWT (which a worker's own Register adds).
	w1, w2 := workerJWT(t, srv, "w1", "claude"), workerJWT(t, srv, "w2", "claude", "codex")
	if err := c.Register(ctx, &Registration{Name: "w1", Version: "v", JWT: w1, Executors: []ExecutorState{{Name: "claude", Kind: "claude-code", Clones: 3}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(ctx, &Registration{Name: "w2", Version: "v", LeaseS: 5, JWT: w2, Executors: []ExecutorState{{Name: "claude", Kind: "claude-code", Clones: 2}, {Name: "codex", Kind: "codex", Clones: 1}}}); err != nil {
		t.Fatal(err)
	}
	ws, err := c.ListWorkers(ctx)
	if err != nil || len(ws) != 2 || ws[0].Name != "w1" || time.Since(ws[0].Heartbeat) > time.Minute {
		t.Fatalf("workers %+v, %v", ws, err)
	}
	crew := Crew(ws)
	if len(crew) != 2 || crew[0].Name != "claude" || crew[0].Clones != 5 || crew[1].Name != "codex" || crew[1].Clones != 1 {
		t.Errorf("crew pools clones by name: %+v %+v", crew[0], crew[1])
	}
	if l := Lease(ws); l != 5*time.Second {
		t.Errorf("lease %s", l)
	}
	if err := c.Unregister(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	if ws, _ := c.ListWorkers(ctx); len(ws) != 1 {
		t.Errorf("after unregister: %+v", ws)
	}
}

// TestWorkerPermissions: a worker's credentials let it publish its own
// reports and registration only; it cannot pose as another worker, make
// or delete a stream, or take another executor's tasks. Revoking its
// credentials disconnects it.
func TestWorkerPermissions(t *testing.T) {
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "js")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	path := creds(t, srv, "w1", UserOptions{Executors: []string{"sh"}})
	id, err := ReadIdentity(path)
	if err != nil || id.Name != "w1" || id.Orchestrator || len(id.Executors) != 1 || id.Executors[0] != "sh" {
		t.Fatalf("identity %+v %v", id, err)
	}
	w, err := Connect(ctx, srv.URL(), "w1", Auth{Creds: path}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// A denied request gets no answer: each waits a second.
	denied := func() context.Context {
		c, cancel := context.WithTimeout(ctx, time.Second)
		t.Cleanup(cancel)
		return c
	}
	if err := w.Register(ctx, &Registration{Name: "w1"}); err != nil {
		t.Errorf("own registration: %v", err)
	}
	if err := w.Register(denied(), &Registration{Name: "w2"}); err == nil {
		t.Error("w1 registered as w2")
	}
	if _, err := w.JS.Publish(denied(), eventSubject("run", "w1", "job"), []byte("{}")); err != nil {
		t.Errorf("own report: %v", err)
	}
	if _, err := w.JS.Publish(denied(), eventSubject("run", "w2", "job"), []byte("{}")); err == nil {
		t.Error("w1 published on w2's subject")
	}
	if _, err := w.Leases.Put(denied(), "run.job", []byte("w1/1.9")); err == nil {
		t.Error("w1 wrote a lease")
	}
	if _, err := w.JS.CreateOrUpdateStream(denied(), jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"evil.>"}}); err == nil {
		t.Error("w1 made a stream")
	}
	if err := w.JS.DeleteStream(denied(), EventsStream); err == nil {
		t.Error("w1 deleted the events stream")
	}
	if _, err := w.JS.CreateOrUpdateStream(denied(), eventsConfig); err == nil {
		t.Error("w1 changed the events stream")
	}
	if _, err := w.JS.CreateOrUpdateConsumer(denied(), TasksStream, jetstream.ConsumerConfig{Durable: consumerName("codex"), FilterSubject: taskFilter("codex"), AckPolicy: jetstream.AckExplicitPolicy}); err == nil {
		t.Error("w1 took codex's tasks")
	}
	if _, err := w.JS.CreateOrUpdateConsumer(denied(), TasksStream, jetstream.ConsumerConfig{Durable: consumerName("sh"), FilterSubject: "muster.task.>", AckPolicy: jetstream.AckExplicitPolicy}); err == nil {
		t.Error("w1 widened its consumer to every task")
	}
	if _, err := w.JS.CreateOrUpdateConsumer(denied(), EventsStream, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy}); err == nil {
		t.Error("w1 read the events stream")
	}
	if _, err := w.JS.CreateOrUpdateConsumer(ctx, TasksStream, jetstream.ConsumerConfig{Durable: consumerName("sh"), FilterSubject: taskFilter("sh"), AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Errorf("own executor's consumer: %v", err)
	}
	keys, err := OpenKeys(srv.store, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Revoke("w1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.NC.IsConnected() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := Connect(ctx, srv.URL(), "w1", Auth{Creds: path}, false); err == nil {
		t.Error("revoked credentials were admitted")
	}
}

// TestServeSyncsEveryWrite: the running server's JetStream syncs each
// write before it acknowledges it (a kill -9 cannot tell: the page cache
// survives a process kill, so the configuration is what is checked).
func TestServeSyncsEveryWrite(t *testing.T) {
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "js")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !srv.SyncAlways() {
		t.Fatalf("JetStream config %+v: SyncAlways is off", srv.ns.JetStreamConfig())
	}
}

func TestCheckURL(t *testing.T) {
	for u, ok := range map[string]bool{
		"nats://127.0.0.1:4222": true, "tls://h:4222,nats://g:4222": true,
		"": false, "nats://u:p@h:4222": false, "h:4222": false, "nats://h:1,nats://u@g:2": false,
	} {
		if err := CheckURL(u); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v", u, err)
		}
	}
}

func TestEpochOrder(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		after bool
	}{
		{"w2/7.2", "w1/7.1", true},
		{"w1/7.1", "w2/7.2", false},
		{"w1/9.1", "w2/7.3", true}, // a message sent again outranks every delivery of the old one
		{"w1/7.1", "w1/7.1", false},
	} {
		if got := epochAfter(c.a, c.b); got != c.after {
			t.Errorf("epochAfter(%s, %s) = %v", c.a, c.b, got)
		}
	}
	r := Report{Worker: "w3", Msg: 7, Delivery: 3}
	if !newer(r, "w1/7.2") || newer(r, "w1/8.1") {
		t.Error("newer")
	}
}

func TestToken(t *testing.T) {
	if a, b := token("a.b"), token("a_b"); a == b || strings.ContainsAny(a, ".*> ") {
		t.Errorf("tokens %q %q", a, b)
	}
}

// TestInfoOfAnotherServer: a NATS server that is not fleet serve does
// not answer InfoSubject, so fleet status cannot confirm its sync
// setting (and says so); fleet serve answers with its own.
func TestInfoOfAnotherServer(t *testing.T) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	defer ns.Shutdown()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if si, ok := (&Conn{NC: nc}).Info(context.Background()); ok {
		t.Errorf("a plain nats-server answered %+v", si)
	}
}

// TestIssueConcurrently: credentials issued at once by separate
// holders of the keys (two muster fleet credentials) are all recorded,
// so that each can be revoked.
func TestIssueConcurrently(t *testing.T) {
	store := t.TempDir()
	if _, err := OpenKeys(store, true); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := OpenKeys(store, false)
			if err == nil {
				_, err = k.Issue(fmt.Sprintf("w%d", i), UserOptions{Executors: []string{"sh"}})
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	k, err := OpenKeys(store, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.Users) != 8 {
		t.Fatalf("users recorded: %v", k.Users)
	}
	for i := range 8 {
		k, _ := OpenKeys(store, false)
		if err := k.Revoke(fmt.Sprintf("w%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	k, _ = OpenKeys(store, false)
	ac, err := jwt.DecodeAccountClaims(k.AccountJWT)
	if err != nil || len(ac.Revocations) != 8 {
		t.Fatalf("revocations %v %v", ac.Revocations, err)
	}
}

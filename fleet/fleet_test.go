package fleet

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// TestServeAuth: a server with credentials admits only clients that
// present them; the error of one that does not names what to set.
func TestServeAuth(t *testing.T) {
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "js"), Users: map[string]string{"muster": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	_, err = Connect(ctx, srv.URL(), "test", Auth{})
	if err == nil || !strings.Contains(err.Error(), EnvUser) || muster.ErrorCode(err) != muster.CodeInternal {
		t.Fatalf("no credentials: %v", err)
	}
	if _, err := Connect(ctx, srv.URL(), "test", Auth{User: "muster", Password: "wrong"}); err == nil {
		t.Fatal("a wrong password was admitted")
	}
	c, err := Connect(ctx, srv.URL(), "test", Auth{User: "muster", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Register(ctx, &Registration{Name: "w1", Version: "v", Executors: []ExecutorState{{Name: "claude", Kind: "claude-code", Clones: 3}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(ctx, &Registration{Name: "w2", Version: "v", LeaseS: 5, Executors: []ExecutorState{{Name: "claude", Kind: "claude-code", Clones: 2}, {Name: "codex", Kind: "codex", Clones: 1}}}); err != nil {
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

func TestServeRefusesOpenNetwork(t *testing.T) {
	_, err := Serve(ServeOptions{Listen: "0.0.0.0:0", Store: t.TempDir()})
	var me *muster.Error
	if !errors.As(err, &me) || me.Code != muster.CodeInvalid {
		t.Fatalf("serving beyond loopback without credentials: %v", err)
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

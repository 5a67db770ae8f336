package fleet

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/mock"
)

// gatedStore is the orchestrator's bundle store, whose reads wait until
// the test's attacker has had its go (so that the race the attacker
// needs is won every time, not one try in several).
type gatedStore struct {
	jetstream.ObjectStore
	after <-chan struct{}
}

func (g gatedStore) GetFile(ctx context.Context, name, path string, o ...jetstream.GetObjectOpt) error {
	select {
	case <-g.after:
	case <-time.After(20 * time.Second):
	}
	return g.ObjectStore.GetFile(ctx, name, path, o...)
}

// TestWorkerCannotTouchOthersResults: a worker holding valid credentials
// (of another executor) tries to delete and overwrite the result an
// honest worker sends back. Where results went through the shared
// bundle store (object names are no subject tokens the server can
// scope), its delete made the honest attempt fail. A worker may write no
// place but its own subjects: every write is refused by the server, and
// the honest result lands.
func TestWorkerCannotTouchOthersResults(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	tmp := t.TempDir()
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(tmp, "js")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	orch, err := Connect(ctx, srv.URL(), "orch", Auth{Creds: creds(t, srv, "orch", UserOptions{Orchestrator: true})}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer orch.Close()
	honest, err := Connect(ctx, srv.URL(), "w1", Auth{Creds: creds(t, srv, "w1", UserOptions{Executors: []string{"x"}})}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer honest.Close()
	spy, err := Connect(ctx, srv.URL(), "spy", Auth{Creds: creds(t, srv, "spy", UserOptions{Executors: []string{"y"}})}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()

	// The attacker: it watches the bundle store and deletes, then
	// overwrites, every result it sees; else it writes one of its own.
	attacked := make(chan struct{})
	attempts := make(chan error, 8)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		defer close(attacked)
		tamper := func(name string) {
			actx, acancel := context.WithTimeout(ctx, 3*time.Second)
			defer acancel()
			attempts <- spy.Bundles.Delete(actx, name)
			_, err := spy.Bundles.PutBytes(actx, name, []byte("# v2 git bundle\nforged\n"))
			attempts <- err
		}
		watch, err := spy.Bundles.Watch(watchCtx, jetstream.IgnoreDeletes())
		if err != nil {
			attempts <- err
			tamper("run1/r/guess")
			return
		}
		defer watch.Stop()
		for {
			select {
			case info := <-watch.Updates():
				if info != nil && strings.Contains(info.Name, "/r/") {
					tamper(info.Name)
					return
				}
				continue
			case <-watchCtx.Done():
			}
			break
		}
		tamper("run1/r/guess") // no result ever went through the store
	}()

	repo := filepath.Join(tmp, "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	base, err := git.Head(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 3*inlineMax) // incompressible: past any inline limit
	_, _ = rand.Read(big)
	agent := &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		return &muster.ExecResult{}, os.WriteFile(filepath.Join(req.Dir, "big.bin"), big, 0o644)
	}}
	spec := &muster.ExecutorSpec{Name: "x", Kind: "command", Clones: 1}
	w, err := NewWorker(WorkerOptions{Name: "w1", Conn: honest, Specs: []*muster.ExecutorSpec{spec}, Executors: map[string]muster.Executor{"x": agent},
		Host: &git.Host{Root: filepath.Join(tmp, "host")}, Scratch: filepath.Join(tmp, "wscratch")})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = w.Run(wctx); close(done) }()
	defer func() { stop(); <-done }()

	orch.Bundles = gatedStore{ObjectStore: orch.Bundles, after: attacked}
	d, err := Open(ctx, orch, DispatchOptions{Run: "run1", Repo: base, Local: git.Bundles{}, Scratch: filepath.Join(tmp, "oscratch")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var recs []muster.Record
	req := &muster.ExecRequest{Run: "run1", Task: &muster.Task{ID: "a", Owns: []string{"big.bin"}}, Role: muster.RoleCoder, Attempt: 1, Dir: repo, Base: base, Prompt: "write"}
	_, err = d.Executor(spec).Execute(ctx, req, func(r muster.Record) { recs = append(recs, r) })
	stopWatch() // the result came some other way: the attacker writes one of its own
	<-attacked
	close(attempts)
	for aerr := range attempts {
		if aerr == nil {
			t.Error("the server let a worker write or delete in the bundle store")
		}
	}
	if err != nil {
		t.Fatalf("the honest result did not land: %v (records %+v)", err, recs)
	}
	if got, err := os.ReadFile(filepath.Join(repo, "big.bin")); err != nil || len(got) != len(big) {
		t.Fatalf("the honest change is not in the worktree: %d bytes, %v", len(got), err)
	}
}

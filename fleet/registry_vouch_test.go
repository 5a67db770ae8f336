package fleet

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// workerJWT issues a worker's credentials for executors and returns the
// public user JWT in them.
func workerJWT(t testing.TB, srv *Server, name string, executors ...string) string {
	t.Helper()
	id, err := ReadIdentity(creds(t, srv, name, UserOptions{Executors: executors}))
	if err != nil {
		t.Fatal(err)
	}
	return id.JWT
}

// TestRegistrationVouchedByCredentials (the attack first): a worker
// holding credentials for executor sh registers, under its own key (all
// the server lets it write), executors its credentials do not name; with
// another worker's JWT; with none; with another fleet's. Before, the
// orchestrator added each such executor to the crew (at the start and
// when it joined mid-run), and tasks of any executor of their role were
// scheduled on it, where no worker could ever take them. Now only the
// executors a JWT signed by the fleet's account for that key names count.
func TestRegistrationVouchedByCredentials(t *testing.T) {
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "js")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	orch, err := Connect(ctx, srv.URL(), "orch", Auth{Creds: creds(t, srv, "orch", UserOptions{Orchestrator: true})}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer orch.Close()
	w1, err := Connect(ctx, srv.URL(), "w1", Auth{Creds: creds(t, srv, "w1", UserOptions{Executors: []string{"sh"}})}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w1.Close()
	other, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "other")})
	if err != nil {
		t.Fatal(err)
	}
	foreign := workerJWT(t, other, "w1", "sh", "evil")
	other.Close()
	exec := func(names ...string) []ExecutorState {
		var out []ExecutorState
		for _, n := range names {
			out = append(out, ExecutorState{Name: n, Kind: muster.ExecCommand, Clones: 4})
		}
		return out
	}
	for _, c := range []struct {
		name string
		r    Registration
		want []string
	}{
		{"its own JWT (Register adds it): only what it names", Registration{Name: "w1", Executors: exec("sh", "evil")}, []string{"sh"}},
		{"another worker's JWT", Registration{Name: "w1", JWT: workerJWT(t, srv, "w2", "evil"), Executors: exec("evil")}, nil},
		{"the orchestrator's JWT", Registration{Name: "w1", JWT: orch.self.JWT, Executors: exec("evil")}, nil},
		{"another fleet's JWT", Registration{Name: "w1", JWT: foreign, Executors: exec("sh", "evil")}, nil},
		{"a JWT that is not one", Registration{Name: "w1", JWT: "e30.e30.e30", Executors: exec("sh")}, nil},
		{"a name that is not its key", Registration{Name: "w2", Executors: exec("sh")}, []string{"sh"}},
	} {
		// Under its own key (the only one the server lets it write), as
		// Register stores it (with its JWT when it names none).
		if c.r.JWT == "" {
			c.r.JWT = w1.self.JWT
		}
		data, _ := json.Marshal(c.r)
		if _, err := w1.Workers.Put(ctx, "w1", data); err != nil {
			t.Fatalf("%s: register: %v", c.name, err)
		}
		ws, err := orch.ListWorkers(ctx)
		if err != nil || len(ws) != 1 {
			t.Fatalf("%s: workers %+v, %v", c.name, ws, err)
		}
		if ws[0].Name != "w1" {
			t.Errorf("%s: the registration under w1's key is named %q", c.name, ws[0].Name)
		}
		var got []string
		for _, s := range Crew(ws) {
			got = append(got, s.Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: crew at the start %v, want %v", c.name, got, c.want)
		}
		// Mid-run: the watch hands the join the same executors.
		wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		var joined []string
		_ = orch.WatchWorkers(wctx, func(r Registration) {
			for _, s := range NewExecutors(r, map[string]bool{}) {
				joined = append(joined, s.Name)
			}
			cancel()
		})
		cancel()
		if !slices.Equal(joined, c.want) {
			t.Errorf("%s: joined mid-run %v, want %v", c.name, joined, c.want)
		}
	}
	// A worker's own Register carries its JWT.
	if err := w1.Register(ctx, &Registration{Name: "w1", Executors: exec("evil", "sh")}); err != nil {
		t.Fatal(err)
	}
	if ws, err := orch.ListWorkers(ctx); err != nil || len(ws) != 1 || len(ws[0].Executors) != 1 || ws[0].Executors[0].Name != "sh" {
		t.Errorf("after Register: %+v, %v", ws, err)
	}
}

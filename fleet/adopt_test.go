package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// TestResumeAdoptsOrCancels: a resumed run's dispatcher keeps for
// adoption only a coder's first-round job whose lease the earlier
// generation recorded, that it kept in its scratch, and whose task's
// reports its journal holds (seen); it cancels the rest at once (a
// reviewer's job, a task the journal holds no report of, a job it kept
// no record of). A job is adopted by the next invocation of its task on
// its executor, with its lease and the reports sent meanwhile; one of a
// task whose invocation goes elsewhere is cancelled then; one nobody
// asks for is cancelled at Close. Jobs done or cancelled stay so.
func TestResumeAdoptsOrCancels(t *testing.T) {
	srv, err := Serve(ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(t.TempDir(), "js")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	c, err := Connect(ctx, srv.URL(), "test", Auth{Creds: creds(t, srv, "orch", UserOptions{Orchestrator: true})}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const run = "rr"
	scratch := t.TempDir()
	if err := os.MkdirAll(filepath.Join(scratch, "jobs"), 0o700); err != nil {
		t.Fatal(err)
	}
	job := func(id, task, executor string, role muster.Role, round int, lease string, kept bool) {
		t.Helper()
		if kept {
			b, _ := json.Marshal(sentJob{Job: &Job{Run: run, ID: id, Gen: 1, Start: "s-" + task, Task: &muster.Task{ID: muster.TaskID(task)}, Executor: executor, Role: role, Round: round}, Clone: 2})
			if err := os.WriteFile(filepath.Join(scratch, "jobs", id+".json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Leases.Put(ctx, leaseKey(run, id), []byte(lease)); err != nil {
			t.Fatal(err)
		}
	}
	job("ja", "a", "x", muster.RoleCoder, 0, "w1/3.1", true)    // adopted by a's next coder on x
	job("jb", "b", "x", muster.RoleReviewer, 0, "w1/4.1", true) // a review: cancelled
	job("jc", "c", "x", muster.RoleCoder, 0, "w1/5.1", true)    // no report of c journaled: cancelled
	job("jd", "d", "x", muster.RoleCoder, 1, "w1/6.1", true)    // a fix round: cancelled
	job("je", "e", "x", muster.RoleCoder, 0, "w1/7.1", false)   // not kept: cancelled
	job("jf", "f", "x", muster.RoleCoder, 0, "w2/8.1", true)    // f's next coder runs on y: cancelled then
	job("jg", "g", "x", muster.RoleCoder, 0, "w2/9.1", true)    // never asked for: cancelled at Close
	job("jh", "h", "x", muster.RoleCoder, 0, LeaseDone, true)   // done: stays done
	// The events stream holds reports up to sequence 2 (another run's):
	// the journal holds the interrupted run's up to 1.
	for range 2 {
		if _, err := c.JS.Publish(ctx, eventSubject(token("other"), "w9", "jz"), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[muster.TaskID]uint64{"a": 1, "b": 1, "d": 1, "e": 1, "f": 1, "g": 1, "h": 1}
	d, err := Open(ctx, c, DispatchOptions{Run: run, Repo: "r", Scratch: scratch, Lease: time.Second, Resume: true, Seen: seen})
	if err != nil {
		t.Fatal(err)
	}
	lease := func(id string) string {
		t.Helper()
		e, err := c.Leases.Get(ctx, leaseKey(run, id))
		if err != nil {
			t.Fatal(err)
		}
		return string(e.Value())
	}
	for id, want := range map[string]string{"ja": "w1/3.1", "jb": LeaseCancel, "jc": LeaseCancel, "jd": LeaseCancel, "je": LeaseCancel, "jf": "w2/8.1", "jg": "w2/9.1", "jh": LeaseDone} {
		if got := lease(id); got != want {
			t.Errorf("after the resume, %s's lease is %q, want %q", id, got, want)
		}
	}
	// f's next coder runs on executor y: f's orphan on x is cancelled.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = d.Executor(&muster.ExecutorSpec{Name: "y"}).Execute(short, &muster.ExecRequest{Task: &muster.Task{ID: "f"}, Role: muster.RoleCoder, Base: "s-f"}, func(muster.Record) {})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("f on y: %v", err)
	}
	if got := lease("jf"); got != LeaseCancel {
		t.Errorf("f's orphan after f ran elsewhere: %q", got)
	}
	// a's next coder on x adopts ja: the holder's result, sent while no
	// orchestrator ran, is its (a result with an error: nothing to fetch).
	b, _ := json.Marshal(Report{Kind: RepResult, Job: "ja", Task: "a", Worker: "w1", Msg: 3, Delivery: 1, Fail: "the worker's own words"})
	if _, err := c.JS.Publish(ctx, eventSubject(token(run), "w1", "ja"), b); err != nil {
		t.Fatal(err)
	}
	var recs []muster.Record
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = d.Executor(&muster.ExecutorSpec{Name: "x"}).Execute(actx, &muster.ExecRequest{Task: &muster.Task{ID: "a"}, Role: muster.RoleCoder, Attempt: 2, Base: "s-a"}, func(r muster.Record) { recs = append(recs, r) })
	var ae *muster.AgentError
	if !errors.As(err, &ae) || ae.Message != "fleet worker w1: the worker's own words" {
		t.Fatalf("a adopted: %v", err)
	}
	if len(recs) != 1 || recs[0].Type != muster.RecWorker || recs[0].Worker != "w1" || recs[0].WorkerClone != 2 {
		t.Errorf("the adoption's records: %+v", recs)
	}
	d.Close()
	if got := lease("jg"); got != LeaseCancel {
		t.Errorf("g's orphan after Close: %q", got)
	}
}

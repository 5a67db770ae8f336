package fleet_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster/fleet"
)

// relay is a TCP relay between a worker and the server that the test
// cuts (every connection closed, new ones refused) and heals.
type relay struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newRelay(t *testing.T, target string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); r.setCut(true) })
	go func() { // until the listener closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			if r.cut {
				r.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				r.mu.Unlock()
				c.Close()
				continue
			}
			r.conns = append(r.conns, c, up)
			r.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	return r
}

func (r *relay) url() string { return "nats://" + r.ln.Addr().String() }

func (r *relay) setCut(cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = cut
	if cut {
		for _, c := range r.conns {
			c.Close()
		}
		r.conns = nil
	}
}

// partitionAgent: task p, on its first delivery, says where it runs and
// waits until the test heals the partition; every other delivery and
// task writes its file at once.
const partitionAgent = `#!/bin/sh
m="$MUSTER_MARKS"
t="$MUSTER_TASK_ID"
if [ "$t" = p ] && mkdir "$m/p.first" 2>/dev/null; then
  echo "$MUSTER_FLEET_WORKER" > "$m/p.first/worker.tmp" && mv "$m/p.first/worker.tmp" "$m/p.first/worker"
  while [ ! -e "$m/healed" ]; do sleep 0.1; done
fi
echo "$t on $MUSTER_FLEET_WORKER" > "$t.txt"
`

// TestFleetPartition: a worker cut off from the server (a TCP relay the
// test cuts) past its lease, while it runs a task: the task goes to
// another worker and lands once from there; when the partition heals,
// the cut-off worker finds its lease gone and drops its attempt rather
// than send a result, and anything of its old lease would be refused.
func TestFleetPartition(t *testing.T) {
	e := newEnv(t)
	e.initRepo(map[string]string{"agent.sh": partitionAgent})
	plan := e.write("plan.md", "# Plan: partition\n\n## [ ] p: Cut off\nOwns: p.txt\n\n## [ ] q: Q\nOwns: q.txt\n")
	rl := newRelay(t, strings.TrimPrefix(e.url, "nats://"))
	cfg := e.write("w1.toml", e.marksWritable(fmt.Sprintf(workerToml, 1)))
	e.workerAt("w1", rl.url(), e.creds("w1", fleet.UserOptions{Executors: []string{"sh"}}), cfg)
	orch := e.start(e.repo, "orch.log", "run", plan, "--nats", e.url, "--plain", "--run-id", "partition")
	e.waitFor(60*time.Second, func() bool { return e.mark("p") == "w1" }, "p starts on w1\n"+e.log("orch.log"))
	rl.setCut(true)
	e.worker("w2", fmt.Sprintf(workerToml, 1))
	e.waitFor(60*time.Second, func() bool {
		for _, ev := range e.journalIfAny("partition") {
			if ev["type"] == "TaskSucceeded" && ev["task"] == "p" {
				return true
			}
		}
		return false
	}, "p lands from w2\n"+e.log("orch.log")+e.log("w2.log"))
	rl.setCut(false)
	e.write("marks/healed", "")
	if code := waitExit(t, orch, 60*time.Second); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, e.log("orch.log"))
	}
	e.checkOnce("partition", []string{"p", "q"}, 1)
	if got := e.git("show", "muster/partition:p.txt"); got != "p on w2" {
		t.Errorf("p.txt %q, want w2's", got)
	}
	e.waitFor(60*time.Second, func() bool { return strings.Contains(e.log("w1.log"), "dropped partition/p") },
		"the healed worker drops its attempt\n"+e.log("w1.log"))
}

// TestFleetServeKilled: fleet serve killed with kill -9 while a worker
// runs a task, and restarted on its store: every task lands once, the
// credentials issued before still connect, and the receipt verifies.
func TestFleetServeKilled(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	store := filepath.Join(e.dir, "serve-store")
	n := 0
	serve := func() {
		n++
		log := fmt.Sprintf("serve%d.log", n)
		e.start(e.dir, log, "fleet", "serve", "--listen", addr, "--store", store)
		e.waitFor(30*time.Second, func() bool { return strings.Contains(e.log(log), "fleet: serving") }, "fleet serve is ready\n"+e.log(log))
	}
	serve()
	keys, err := fleet.OpenKeys(store, false)
	if err != nil {
		t.Fatal(err)
	}
	e.keys, e.url = keys, "nats://"+addr
	e.vars = append(e.vars, "MUSTER_NATS_CREDS="+e.creds("orch2", fleet.UserOptions{Orchestrator: true}))
	e.initRepo(map[string]string{"agent.sh": partitionAgent})
	plan := e.write("plan.md", "# Plan: serve\n\n## [ ] p: Runs across the restart\nOwns: p.txt\n\n## [ ] q: After p\nAfter: p\nOwns: q.txt\n\n## [ ] r: R\nOwns: r.txt\n")
	e.worker("w1", fmt.Sprintf(workerToml, 1))
	e.worker("w2", fmt.Sprintf(workerToml, 1))
	orch := e.start(e.repo, "orch.log", "run", plan, "--nats", e.url, "--plain", "--run-id", "serve")
	e.waitFor(60*time.Second, func() bool { return e.mark("p") != "" }, "p starts\n"+e.log("orch.log"))
	first := e.procs[0]
	if err := syscall.Kill(first.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	serve()
	e.write("marks/healed", "")
	if code := waitExit(t, orch, 90*time.Second); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, e.log("orch.log"))
	}
	e.checkOnce("serve", []string{"p", "q", "r"}, 1)
	if _, err := os.Stat(filepath.Join(store, fleet.KeysDir, "operator.nk")); err != nil {
		t.Fatal(err)
	}
}

// journalIfAny is the run's journal as far as it is written (a line
// being written is skipped), or nothing while there is none.
func (e *env) journalIfAny(run string) []map[string]any {
	b, err := os.ReadFile(filepath.Join(e.repo, ".git", "muster", "runs", run, "journal.jsonl"))
	if err != nil {
		return nil
	}
	var out []map[string]any
	for _, l := range strings.Split(string(b), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

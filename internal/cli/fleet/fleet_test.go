package fleet_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster/fleet"
)

// agentScript is the coder of the fleet tests. Tasks named in SLOW
// sleep (once, on the first delivery anywhere) after saying which worker
// took them; every task writes <task>.txt; task "o" also writes outside
// its Owns.
const agentScript = `#!/bin/sh
m="$MUSTER_MARKS"
t="$MUSTER_TASK_ID"
echo '{"type":"usage","model":"m","input_tokens":100,"output_tokens":10,"cost_usd":0.01}'
echo "{\"type\":\"tool\",\"name\":\"Edit\",\"args\":\"$t.txt\"}"
for s in $SLOW; do
  if [ "$s" = "$t" ] && mkdir "$m/$t.first" 2>/dev/null; then
    echo "$MUSTER_FLEET_WORKER" > "$m/$t.first/worker.tmp" && mv "$m/$t.first/worker.tmp" "$m/$t.first/worker"
    echo $$ > "$m/$t.pid"
    exec sleep 60
  fi
done
[ "$t" = r ] && sleep 2
if [ "$t" = q ]; then
  if [ "$MUSTER_ROUND" -gt 0 ] && grep -q "say please" "$MUSTER_PROMPT_FILE"; then echo "q please" > q.txt; else echo q > q.txt; fi
  exit 0
fi
if [ "$t" = w ]; then
  while [ ! -e "$m/awake" ]; do sleep 0.1; done
  sleep 2
fi
echo "$t on $MUSTER_FLEET_WORKER" > "$t.txt"
[ "$t" = o ] && echo evil > evil.txt
exit 0
`

// reviewScript is a reviewer: a major finding on its first review, then
// approval; it fails unless the diff it is given has an added line.
const reviewScript = `#!/bin/sh
grep -q '^+q' "$MUSTER_DIFF_FILE" || { echo "no change to review" >&2; exit 3; }
if mkdir "$MUSTER_MARKS/review.first" 2>/dev/null; then
  echo '{"type":"findings","findings":[{"severity":"major","title":"say please","path":"q.txt"}]}'
else
  echo '{"type":"findings","findings":[]}'
fi
`

const workerToml = `[fleet]
lease = "2s"

[executors.sh]
kind = "command"
clones = %d
command = ["./agent.sh"]

[gates]
ignored = "false"
`

func (e *env) mark(task string) string {
	b, err := os.ReadFile(filepath.Join(e.dir, "marks", task+".first", "worker"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// TestWorkerRegistration: a worker registers its executors with their
// clones, fleet status shows it (JSON of the contract, and text), and a
// clean stop unregisters it.
func TestWorkerRegistration(t *testing.T) {
	e := newEnv(t)
	w := e.worker("w1", fmt.Sprintf(workerToml, 2)+"\n[executors.rv]\nkind = \"command\"\ncommand = [\"true\"]\nroles = [\"reviewer\"]\n")
	s := e.status()
	if len(s.Workers) != 1 || s.Workers[0].Name != "w1" || s.Workers[0].Version == "" || s.Workers[0].Age > 15 {
		t.Fatalf("status: %+v", s)
	}
	ex := s.Workers[0].Executors
	if len(ex) != 2 || ex[0].Name != "sh" || ex[0].Kind != "command" || ex[0].Clones != 2 || ex[0].Busy != 0 || ex[1].Name != "rv" || ex[1].Clones != 1 {
		t.Fatalf("executors: %+v", ex)
	}
	// Exactly the contract's keys, at every level.
	_, raw, _ := e.run(e.dir, 30*time.Second, "fleet", "status", "--nats", e.url, "--json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	w0 := doc["workers"].([]any)[0].(map[string]any)
	x0 := w0["executors"].([]any)[0].(map[string]any)
	for _, c := range []struct {
		obj  map[string]any
		want string
	}{{doc, "workers"}, {w0, "executors heartbeat_age_s name version"}, {x0, "busy clones kind name"}} {
		var keys []string
		for k := range c.obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if got := strings.Join(keys, " "); got != c.want {
			t.Errorf("keys %q, want %q", got, c.want)
		}
	}
	code, out, _ := e.run(e.dir, 30*time.Second, "fleet", "status", "--nats", e.url)
	if code != 0 || !strings.Contains(out, "w1") || !strings.Contains(out, "sh") || !strings.Contains(out, "ago") {
		t.Fatalf("fleet status: exit %d\n%s", code, out)
	}
	if err := w.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatalf("worker after SIGTERM: %v\n%s", err, e.log("w1.log"))
	}
	if e.registered("w1") {
		t.Fatal("a worker that stopped cleanly is still registered")
	}
}

// TestFleetInputErrors: credentials on argv, a bad URL and an
// unreachable server are refused with the contract's exit codes.
func TestFleetInputErrors(t *testing.T) {
	e := newEnv(t)
	wc := e.creds("w1", fleet.UserOptions{Executors: []string{"sh"}})
	other := e.write("other.toml", "[executors.codex]\nkind = \"codex\"\n")
	old := e.write("old.toml", "[fleet]\nuser = \"muster\"\npassword_env = \"PW\"\n")
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"fleet", "status", "--nats", "nats://u:secret@127.0.0.1:1"}, 2, "no credentials in the URL"},
		{[]string{"worker", "--nats", "nats://u:secret@127.0.0.1:1", "--name", "x"}, 2, "no credentials in the URL"},
		{[]string{"fleet", "status"}, 2, "no NATS URL"},
		{[]string{"fleet", "status", "--nats", "nats://127.0.0.1:1"}, 3, "connect to the fleet"},
		{[]string{"worker", "--nats", e.url}, 2, "not a worker's credentials"},
		{[]string{"worker", "--nats", e.url, "--creds", wc, "--name", "w2"}, 2, `the worker's name is its credential's, "w1"`},
		{[]string{"worker", "--nats", e.url, "--creds", wc, "--config", other}, 2, "executor codex: the credentials of w1 do not name it"},
		{[]string{"worker", "--nats", e.url, "--creds", filepath.Join(e.dir, "none.creds")}, 2, "none.creds"},
		{[]string{"fleet", "status", "--nats", e.url, "--config", old}, 2, "muster fleet credentials"},
		{[]string{"fleet", "credentials", "w3", "--store", filepath.Join(e.dir, "st"), "-o", filepath.Join(e.dir, "w3.creds")}, 2, "--executor"},
		{[]string{"fleet", "credentials", "--revoke", "nobody", "--store", filepath.Join(e.dir, "st")}, 2, "no fleet keys"},
	} {
		code, _, errs := e.run(e.dir, 30*time.Second, c.args...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("muster %s: exit %d, want %d with %q\n%s", strings.Join(c.args, " "), code, c.code, c.msg, errs)
		}
		if strings.Contains(errs, "secret") {
			t.Errorf("muster %s printed the password: %s", strings.Join(c.args, " "), errs)
		}
	}
	// The shared password of earlier versions, in the environment.
	vars := e.vars
	e.vars = append(e.vars, "MUSTER_NATS_PASSWORD=secret")
	for _, args := range [][]string{{"fleet", "status", "--nats", e.url}, {"fleet", "serve", "--store", filepath.Join(e.dir, "st2")}} {
		if code, _, errs := e.run(e.dir, 30*time.Second, args...); code != 2 || !strings.Contains(errs, "MUSTER_NATS_PASSWORD is set") || !strings.Contains(errs, "fleet credentials") {
			t.Errorf("muster %s with MUSTER_NATS_PASSWORD: exit %d\n%s", strings.Join(args, " "), code, errs)
		}
	}
	e.vars = vars
}

const fleetPlan = `# Plan: fleet

## [ ] k: Killed with its worker
Owns: k.txt
Gate: test -f k.txt

## [ ] p: Paused with its worker
Owns: p.txt

## [ ] a: A
Owns: a.txt
Gate: grep -q a a.txt

## [ ] b: B
Owns: b.txt

## [ ] c: After k
After: k
Owns: c.txt

## [ ] d: After p
After: p
Owns: d.txt

## [ ] w: Waits until the paused worker is awake
After: c, d
Owns: w.txt

## [ ] y: Y, beside z
After: w
Owns: y.txt

## [ ] z: Z, beside y
After: w
Owns: z.txt
`

// TestFleetSurvivesWorkers is the test: three workers, one
// killed with kill -9 while it runs a task, one paused (SIGSTOP) for 15
// s while it runs another. The run ends with every task succeeded
// exactly once, on more than one worker, the receipt verifies, and the
// paused worker's stale work is dropped when it wakes.
func TestFleetSurvivesWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("pauses a worker for 15 s")
	}
	e := newEnv(t)
	e.vars = append(e.vars, "SLOW=k p")
	e.initRepo(map[string]string{"agent.sh": agentScript})
	plan := e.write("plan.md", fleetPlan)
	workers := map[string]*exec.Cmd{}
	for _, n := range []string{"w1", "w2", "w3"} {
		workers[n] = e.worker(n, fmt.Sprintf(workerToml, 1))
	}
	orch := e.start(e.repo, "orch.log", "run", plan, "--nats", e.url, "--plain", "--run-id", "survive")
	e.waitFor(60*time.Second, func() bool { return e.mark("k") != "" && e.mark("p") != "" }, "k and p start\n"+e.log("orch.log"))
	killed, paused := e.mark("k"), e.mark("p")
	if killed == paused {
		t.Fatalf("k and p on one worker %s (one clone each)", killed)
	}
	if err := workers[killed].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := workers[paused].Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Second)
	if err := workers[paused].Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// y and z start together after w, on the two live workers' one
	// clone each.
	e.write("marks/awake", "")
	code := waitExit(t, orch, 60*time.Second)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, e.log("orch.log"))
	}
	e.checkOnce("survive", []string{"k", "p", "a", "b", "c", "d", "w", "y", "z"}, 2)
	// The paused worker, awake, drops its stale lease on p.
	e.waitFor(30*time.Second, func() bool { return strings.Contains(e.log(paused+".log"), "dropped survive/p") }, "the paused worker drops p\n"+e.log(paused+".log"))
	if s := e.journal("survive"); countType(s, "WorkerAssigned", "k") < 2 || countType(s, "WorkerAssigned", "p") < 2 {
		t.Errorf("k and p were not offered again:\n%s", e.log("orch.log"))
	}
}

// waitExit waits (bounded) for a background muster and returns its status.
func waitExit(t *testing.T, c *exec.Cmd, d time.Duration) int {
	t.Helper()
	done := make(chan struct{})
	go func() {
		_ = c.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d):
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("muster still running after %s", d)
	}
	return c.ProcessState.ExitCode()
}

func countType(events []map[string]any, typ, task string) int {
	n := 0
	for _, ev := range events {
		if ev["type"] == typ && ev["task"] == task {
			n++
		}
	}
	return n
}

// checkOnce checks a finished run: every task succeeded exactly once
// with one commit on the run branch, on at least minWorkers workers, and
// the receipt verifies.
func (e *env) checkOnce(run string, tasks []string, minWorkers int) {
	t := e.t
	t.Helper()
	st := e.runStatus()
	if st.Run != run || st.State != "succeeded" {
		t.Fatalf("status: run %s %s", st.Run, st.State)
	}
	seen := map[string]bool{}
	for _, tk := range st.Tasks {
		if tk.State != "succeeded" || tk.Commit == nil || tk.Worker == nil {
			t.Errorf("task %s: %s, commit %v, worker %v", tk.ID, tk.State, tk.Commit, tk.Worker)
			continue
		}
		seen[*tk.Worker] = true
	}
	if len(seen) < minWorkers {
		t.Errorf("tasks ran on %d workers (%v), want at least %d", len(seen), seen, minWorkers)
	}
	events := e.journal(run)
	for _, id := range tasks {
		if n := countType(events, "TaskSucceeded", id); n != 1 {
			t.Errorf("task %s succeeded %d times in the journal", id, n)
		}
	}
	log := e.git("log", "--format=%(trailers:key=Muster-Task,valueonly)", "main..muster/"+run)
	var got []string
	for _, l := range strings.Split(log, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			got = append(got, l)
		}
	}
	sort.Strings(got)
	want := append([]string(nil), tasks...)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("task commits on the run branch: %v, want one each of %v", got, want)
	}
	if code, out, errs := e.run(e.repo, 60*time.Second, "verify", run); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, out, errs)
	}
}

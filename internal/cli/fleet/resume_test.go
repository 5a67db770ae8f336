package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/muster-run/muster/fleet"
)

const resumePlan = `# Plan: resume

## [ ] a: Slow the first time
Owns: a.txt

## [ ] b: After a
After: a
Owns: b.txt

## [ ] c: C
Owns: c.txt

## [ ] d: After c
After: c
Owns: d.txt
`

// TestFleetResumeAfterOrchestratorKill: the orchestrator killed with
// kill -9 while a worker runs a task, and what it kept of its jobs lost
// (a resume cannot adopt the attempt); muster resume --nats cancels it,
// the worker drops it, and the run finishes as an uninterrupted one
// would (every task once, one commit each, the receipt verifies).
// TestFleetResumeAdoptsRunningAttempt is the resume that adopts.
func TestFleetResumeAfterOrchestratorKill(t *testing.T) {
	e := newEnv(t)
	e.vars = append(e.vars, "SLOW=a")
	e.initRepo(map[string]string{"agent.sh": agentScript})
	plan := e.write("plan.md", resumePlan)
	e.worker("w1", fmt.Sprintf(workerToml, 1))
	e.worker("w2", fmt.Sprintf(workerToml, 1))
	orch := e.start(e.repo, "orch.log", "run", plan, "--nats", e.url, "--plain", "--run-id", "resumed")
	e.waitFor(60*time.Second, func() bool { return e.mark("a") != "" }, "a starts\n"+e.log("orch.log"))
	holder := e.mark("a")
	if err := orch.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = orch.Wait()
	if err := os.RemoveAll(filepath.Join(e.repo, ".git", "muster", "runs", "resumed", "fleet", "jobs")); err != nil {
		t.Fatal(err)
	}
	code, _, errs := e.run(e.repo, 90*time.Second, "resume", "resumed", "--nats", e.url, "--plain")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, errs)
	}
	e.checkOnce("resumed", []string{"a", "b", "c", "d"}, 1)
	e.waitFor(30*time.Second, func() bool { return strings.Contains(e.log(holder+".log"), "dropped resumed/a") },
		"the worker drops the interrupted attempt\n"+e.log(holder+".log"))
}

const refusePlan = `# Plan: refuse

## [ ] r: Real work, with forgers about
Owns: r.txt, r.gen
Gate: echo built > r.gen

## [ ] o: Writes outside its Owns
Owns: o.txt
`

// TestFleetRefusesForeignResults: a holder of valid worker credentials
// (for the same executor, doing other work) learns of a job another
// worker holds, and forges a claim of that job's own message with a
// higher delivery, a result under its own name, and one that names the
// real worker; the server refuses its publishing on the real worker's
// subject; the orchestrator refuses the rest and journals each as
// Refused, and the task's commit is the real worker's. A worker whose
// change touches paths outside Owns is refused as a local agent would
// be: the task fails with a boundary violation and nothing of it lands.
func TestFleetRefusesForeignResults(t *testing.T) {
	e := newEnv(t)
	e.initRepo(map[string]string{"agent.sh": agentScript})
	plan := e.write("plan.md", refusePlan)
	e.worker("w1", fmt.Sprintf(workerToml, 2))

	// The watcher (the orchestrator's credentials) tells the rogue what
	// it could not read itself.
	watcher, err := fleet.Connect(context.Background(), e.url, "watcher", fleet.Auth{Creds: filepath.Join(e.dir, "orchestrator.creds")}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	rogue, err := fleet.Connect(context.Background(), e.url, "rogue", fleet.Auth{Creds: e.creds("rogue", fleet.UserOptions{Executors: []string{"sh"}})}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rogue.Close()
	if _, err := rogue.NC.Subscribe("muster.ev.>", func(*nats.Msg) {}); err == nil {
		_ = rogue.NC.Flush()
		if rogue.NC.LastError() == nil {
			t.Error("a worker subscribed to every worker's reports")
		}
	}
	var mu sync.Mutex
	forged, denied := 0, 0
	sub, err := watcher.NC.Subscribe("muster.ev.>", func(m *nats.Msg) {
		var r fleet.Report
		if json.Unmarshal(m.Data, &r) != nil || r.Kind != fleet.RepClaim || r.Task != "r" || r.Worker != "w1" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		own := strings.Replace(m.Subject, ".w1.", ".rogue.", 1)
		claim := r
		claim.Worker, claim.Delivery = "rogue", r.Delivery+8
		result := r
		result.Kind, result.Worker, result.Delivery, result.Commit, result.BundleData = fleet.RepResult, "rogue", r.Delivery+8, strings.Repeat("a", 40), []byte("# v2 git bundle\n")
		posing := result
		posing.Worker, posing.Delivery = "w1", r.Delivery
		for i, f := range []fleet.Report{claim, result, posing} {
			b, _ := json.Marshal(f)
			if _, err := rogue.JS.Publish(ctx, own, b, jetstream.WithMsgID(fmt.Sprintf("forged-%d", i))); err == nil {
				mu.Lock()
				forged++
				mu.Unlock()
			}
		}
		b, _ := json.Marshal(posing)
		short, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		if _, err := rogue.JS.Publish(short, m.Subject, b, jetstream.WithMsgID("forged-w1")); err != nil {
			mu.Lock()
			denied++
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	code, _, errs := e.run(e.repo, 90*time.Second, "run", plan, "--nats", e.url, "--plain", "--run-id", "refuse")
	if code != 1 {
		t.Fatalf("run: exit %d, want 1 (o fails)\n%s", code, errs)
	}
	mu.Lock()
	if forged != 3 || denied != 1 {
		t.Fatalf("the forger sent %d reports on its own subject (want 3) and was denied %d on w1's (want 1)", forged, denied)
	}
	mu.Unlock()
	st := e.runStatus()
	for _, tk := range st.Tasks {
		switch tk.ID {
		case "r":
			if tk.State != "succeeded" || tk.Worker == nil || *tk.Worker != "w1" {
				t.Errorf("r: %s on %v", tk.State, tk.Worker)
			}
		case "o":
			if tk.State != "failed" || tk.Reason == nil || !strings.Contains(*tk.Reason, "boundary violation") || !strings.Contains(*tk.Reason, "evil.txt") {
				t.Errorf("o: %s, reason %v", tk.State, tk.Reason)
			}
		}
	}
	if got := e.git("show", "muster/refuse:r.txt"); got != "r on w1" {
		t.Errorf("r.txt on the run branch: %q", got)
	}
	// What the gate wrote on the worker is not part of the change.
	if out := e.git("ls-tree", "-r", "--name-only", "muster/refuse"); strings.Contains(out, "r.gen") {
		t.Errorf("a file the gate wrote landed:\n%s", out)
	}
	if out := e.git("ls-tree", "-r", "--name-only", "muster/refuse"); strings.Contains(out, "evil.txt") || strings.Contains(out, "o.txt") {
		t.Errorf("the refused change landed:\n%s", out)
	}
	// The views say where the task ran: worker/executor#clone.
	html := filepath.Join(e.dir, "report.html")
	if code, _, errs := e.run(e.repo, 30*time.Second, "report", "refuse", "--html", html); code != 0 {
		t.Fatalf("report --html: exit %d\n%s", code, errs)
	}
	if b, err := os.ReadFile(html); err != nil || !regexp.MustCompile(`w1/sh#[12]`).Match(b) {
		t.Errorf("the HTML report does not show w1/sh#N (%v)", err)
	}
	if code, out, _ := e.run(e.repo, 30*time.Second, "status", "refuse"); code != 0 || !regexp.MustCompile(`r\s+w1/sh#[12]`).MatchString(out) {
		t.Errorf("status does not show w1/sh#N for r:\n%s", out)
	}
	refused := 0
	for _, ev := range e.journal("refuse") {
		if ev["type"] == "Refused" {
			refused++
			if ev["worker"] != "rogue" || ev["task"] != "r" || !strings.Contains(ev["subject"].(string), ".rogue.") {
				t.Errorf("Refused names the sender and its subject: %v", ev)
			}
			continue
		}
		if ev["worker"] == "rogue" {
			t.Errorf("journal took the forger: %v", ev)
		}
	}
	if refused != 3 {
		t.Errorf("%d Refused events, want 3 (the claim, the result, the posing result)", refused)
	}
}

// TestWorkerHandsBack: a worker stopped with SIGTERM while it runs a
// task hands the task back at once (no lease to wait out) and exits 0;
// another worker does it, and the run succeeds.
func TestWorkerHandsBack(t *testing.T) {
	e := newEnv(t)
	e.vars = append(e.vars, "SLOW=h")
	e.initRepo(map[string]string{"agent.sh": agentScript})
	plan := e.write("plan.md", "# Plan: handback\n\n## [ ] h: Handed back\nOwns: h.txt\n\n## [ ] i: I\nOwns: i.txt\n")
	ws := map[string]*exec.Cmd{"w1": e.worker("w1", fmt.Sprintf(workerToml, 1)), "w2": e.worker("w2", fmt.Sprintf(workerToml, 1))}
	orch := e.start(e.repo, "orch.log", "run", plan, "--nats", e.url, "--plain", "--run-id", "handback")
	e.waitFor(60*time.Second, func() bool { return e.mark("h") != "" }, "h starts\n"+e.log("orch.log"))
	holder := e.mark("h")
	if err := ws[holder].Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, ws[holder], 30*time.Second); code != 0 {
		t.Errorf("worker after SIGTERM: exit %d\n%s", code, e.log(holder+".log"))
	}
	if !strings.Contains(e.log(holder+".log"), "handed back handback/h") {
		t.Errorf("no hand-back in the log:\n%s", e.log(holder+".log"))
	}
	if code := waitExit(t, orch, 60*time.Second); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, e.log("orch.log"))
	}
	e.checkOnce("handback", []string{"h", "i"}, 1)
	for _, tk := range e.runStatus().Tasks {
		if tk.ID == "h" && (tk.Worker == nil || *tk.Worker == holder) {
			t.Errorf("h ran on %v, not on the other worker", tk.Worker)
		}
	}
}

// TestWorkerDropsOrphanedJobs: an orchestrator killed and never resumed
// leaves a job running on a worker; once the run's presence lapses and
// its run_ttl (the orchestrator's [fleet] run_ttl, here 2 s) passes, the
// worker stops the agent and drops the job instead of spending on it.
func TestWorkerDropsOrphanedJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the run's presence to lapse (15 s)")
	}
	e := newEnv(t)
	e.vars = append(e.vars, "SLOW=a")
	e.initRepo(map[string]string{"agent.sh": agentScript, "muster.toml": "[fleet]\nrun_ttl = \"2s\"\n"})
	plan := e.write("plan.md", resumePlan)
	e.worker("w1", fmt.Sprintf(workerToml, 1))
	orch := e.start(e.repo, "orch.log", "run", plan, "--nats", e.url, "--plain", "--run-id", "orphan")
	e.waitFor(60*time.Second, func() bool { return e.mark("a") != "" }, "a starts\n"+e.log("orch.log"))
	if err := orch.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = orch.Wait()
	e.waitFor(40*time.Second, func() bool {
		return strings.Contains(e.log("w1.log"), "dropped orphan/a") && strings.Contains(e.log("w1.log"), "orchestrator is gone")
	}, "the worker drops the orphaned job\n"+e.log("w1.log"))
	b, err := os.ReadFile(filepath.Join(e.dir, "marks", "a.pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmtSscan(strings.TrimSpace(string(b)), &pid); err != nil {
		t.Fatal(err)
	}
	e.waitFor(10*time.Second, func() bool { return syscall.Kill(pid, 0) != nil }, "the orphaned agent is stopped")
	if s := e.status(); len(s.Workers) != 1 || s.Workers[0].Executors[0].Busy != 0 {
		e.waitFor(10*time.Second, func() bool { s := e.status(); return len(s.Workers) == 1 && s.Workers[0].Executors[0].Busy == 0 }, "the worker is free again")
	}
}

// TestFleetReviewRound: reviewers served by the fleet get the change
// (the coder's worktree as a commit, and the diff); a major finding sends
// the task back to the remote coder with the finding in its prompt, on the
// state of its first round; the second review approves. The reviewer
// never runs on the worker that made the change, though it serves the
// reviewer's executor too.
func TestFleetReviewRound(t *testing.T) {
	e := newEnv(t)
	e.initRepo(map[string]string{"agent.sh": agentScript, "review.sh": reviewScript})
	plan := e.write("plan.md", "# Plan: review\n\n## [ ] q: Q, reviewed\nOwns: q.txt\n")
	rv := "\n[executors.rv]\nkind = \"command\"\ncommand = [\"./review.sh\"]\nroles = [\"reviewer\"]\n"
	e.worker("w1", fmt.Sprintf(workerToml, 1)+rv)
	e.worker("w2", "[fleet]\nlease = \"2s\"\n"+rv)
	code, _, errs := e.run(e.repo, 90*time.Second, "run", plan, "--nats", e.url, "--plain", "--run-id", "review")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	if got := e.git("show", "muster/review:q.txt"); got != "q please" {
		t.Errorf("q.txt %q, want the fixed round's", got)
	}
	ev := e.journal("review")
	if n := countType(ev, "Reviewed", "q"); n != 2 {
		t.Errorf("%d reviews, want 2", n)
	}
	if n := countType(ev, "FixRound", "q"); n != 1 {
		t.Errorf("%d fix rounds, want 1", n)
	}
	reviewerOnFleet := false
	for _, x := range ev {
		if x["type"] == "WorkerAssigned" && x["role"] == "reviewer" {
			reviewerOnFleet = true
			if x["worker"] != "w2" {
				t.Errorf("the reviewer ran on %v, where the change was made", x["worker"])
			}
		}
	}
	if !reviewerOnFleet {
		t.Error("no review ran on the fleet")
	}
	e.checkOnce("review", []string{"q"}, 1)
}

package driver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/git"
)

// holdFirstMove is the run's workspace with its first Advance (the
// first task's fast-forward) held until every other task's commit is in
// the integration queue: the next batch then takes them all, whatever
// order they arrived in.
type holdFirstMove struct {
	*git.Workspace
	once    sync.Once
	opened  sync.Once
	release chan struct{}
}

func (h *holdFirstMove) Advance(ctx context.Context, merged, expected string) error {
	h.once.Do(func() { <-h.release })
	return h.Workspace.Advance(ctx, merged, expected)
}

// batchRun is an e2e run of task z and the batch tasks: z's coder works
// alone; the others wait until z has committed, so that z lands first
// (a fast-forward, held until the others are queued) and the others,
// made on the base, integrate as one batch onto z.
type batchRun struct {
	*e2e
	others []muster.TaskID
}

func newBatchRun(t *testing.T, others []string, coderTail string, gates ...muster.GateSpec) *batchRun {
	p := &muster.Plan{Tasks: []*muster.Task{task("z", "z.txt")}}
	for _, id := range others {
		p.Tasks = append(p.Tasks, task(id, id+".txt"))
	}
	coder := `set -e
if [ "$MUSTER_TASK_ID" != z ]; then
  i=0; while [ ! -f "$SCRIPTS/committed-z" ]; do i=$((i+1)); [ $i -lt 3000 ] || exit 1; sleep 0.01; done
fi
` + coderTail
	e := newE2E(t, p, map[string]string{}, coder, "", gates...)
	e.opts.Config.Executors[0].Clones = len(others) + 1
	e.opts.Overlap = func(a, b []string) bool {
		for _, x := range a {
			if slices.Contains(b, x) {
				return true
			}
		}
		return false
	}
	scripts := e.opts.Config.Executors[0].Env["SCRIPTS"]
	hold := &holdFirstMove{Workspace: e.ws, release: make(chan struct{})}
	e.opts.Workspace = hold
	var mu sync.Mutex
	queued := map[muster.TaskID]bool{}
	e.opts.OnEvent = func(ev *muster.Event, _ *engine.State) {
		switch {
		case ev.Type == muster.EvCommitted && ev.Task == "z":
			if err := os.WriteFile(filepath.Join(scripts, "committed-z"), nil, 0o644); err != nil {
				panic(err)
			}
		case ev.Type == muster.EvPhase && ev.Phase == "integrating" && ev.Task != "z":
			mu.Lock()
			queued[ev.Task] = true
			if len(queued) == len(others) {
				hold.opened.Do(func() { close(hold.release) })
			}
			mu.Unlock()
		}
	}
	b := &batchRun{e2e: e}
	for _, id := range others {
		b.others = append(b.others, muster.TaskID(id))
	}
	return b
}

// integrationRuns returns the integration GateRan events.
func (e *e2e) integrationRuns() []muster.Event {
	var out []muster.Event
	for _, g := range e.events(muster.EvGateRan) {
		if g.Phase == "integration" {
			out = append(out, g)
		}
	}
	return out
}

// checkBranch checks that every task commit the journal records
// (Integrated) is on the run branch, every commit on the branch since the
// base is one of them, and each tip the branch pointed at passes gate.
func (e *e2e) checkBranch(t *testing.T, gate string) {
	t.Helper()
	made := map[string]muster.TaskID{}
	tips := map[string]bool{}
	for _, ev := range e.events(muster.EvIntegrated) {
		if _, dup := made[ev.Commit]; dup {
			t.Fatalf("commit %s integrated twice", ev.Commit)
		}
		made[ev.Commit] = ev.Task
		tips[ev.Tip] = true
	}
	on := strings.Fields(sh(t, e.repo, "git", "rev-list", "--first-parent", e.ws.Base()+".."+e.ws.Branch()))
	if len(on) != len(made) {
		t.Fatalf("%d commits on the run branch, %d Integrated", len(on), len(made))
	}
	for _, c := range on {
		if _, ok := made[c]; !ok {
			t.Fatalf("commit %s on the run branch has no Integrated event", c)
		}
	}
	tree := t.TempDir()
	for c := range tips {
		sh(t, e.repo, "sh", "-c", "rm -rf "+tree+"/* && git archive "+c+" | tar -x -C "+tree)
		if err := exec.Command("sh", "-c", "cd "+tree+" && "+gate).Run(); err != nil {
			t.Fatalf("the run branch pointed at %s, which fails the gate", c)
		}
	}
}

// A batch of independent tasks integrates with one plan-wide gate run:
// one Integrating names the whole chain, one Integrated per task commit.
func TestE2EBatchOfIndependentTasksGatesOnce(t *testing.T) {
	others := []string{"a", "b", "c", "d"}
	b := newBatchRun(t, others, `echo "$MUSTER_TASK_ID" > "$MUSTER_TASK_ID.txt"
`, muster.GateSpec{Name: "files", Command: "test -f README.md"})
	st := b.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s", st.RunState)
	}
	if runs := b.integrationRuns(); len(runs) != 1 || !*runs[0].Passed {
		t.Fatalf("integration gate runs %+v, want one for the batch", runs)
	}
	var chains [][]muster.ChainLink
	for _, ev := range b.events(muster.EvIntegrating) {
		chains = append(chains, ev.Chain)
	}
	if len(chains) != 2 || chains[0] != nil || len(chains[1]) != len(others) {
		t.Fatalf("Integrating chains %+v: want z alone, then one batch of %d", chains, len(others))
	}
	top := chains[1][len(others)-1].Commit
	if runs := b.integrationRuns(); runs[0].Commit != top {
		t.Fatalf("the gate ran on %s, not the chain's top %s", runs[0].Commit, top)
	}
	if got := sh(t, b.repo, "git", "rev-parse", b.ws.Branch()); got != top {
		t.Fatalf("run branch at %s, want the top %s", got, top)
	}
	b.checkBranch(t, "test -f README.md")
	for _, id := range append(b.others, "z") {
		if s := st.Tasks[id]; s.State != muster.StateSucceeded || s.Commit == "" {
			t.Fatalf("task %s %s at %q", id, s.State, s.Commit)
		}
	}
}

// Two tasks of one batch that each pass alone and break the plan-wide
// gate together: the run branch never points at a red tree; the later
// one in the chain is found by bisection (within ⌈log₂ N⌉ + 1 gate runs
// after the first red one), fixed on the new tip and lands; the other
// lands untouched, and so do the rest of the batch.
func TestE2EBatchSemanticConflictIsBisected(t *testing.T) {
	others := []string{"a", "b", "c", "d"}
	const gate = "! { grep -q bad a.txt && grep -q bad c.txt; }"
	b := newBatchRun(t, others, `v=ok
case "$MUSTER_TASK_ID" in a|c) v=bad ;; esac
if [ "$MUSTER_ROUND" -gt 0 ]; then v=fixed; fi
echo "$v" > "$MUSTER_TASK_ID.txt"
`, muster.GateSpec{Name: "together", Command: gate})
	st := b.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: a %q c %q", st.RunState, st.Tasks["a"].Reason, st.Tasks["c"].Reason)
	}
	var batch []muster.ChainLink
	for _, ev := range b.events(muster.EvIntegrating) {
		if len(ev.Chain) == len(others) {
			batch = ev.Chain
		}
	}
	fixes := b.events(muster.EvFixRound)
	if len(fixes) != 1 || (fixes[0].Task != "a" && fixes[0].Task != "c") || !strings.Contains(fixes[0].Reason, "failed on integration") {
		t.Fatalf("fix rounds %+v: want one, of a or c", fixes)
	}
	culprit, other := fixes[0].Task, muster.TaskID("a")
	if culprit == "a" {
		other = "c"
	}
	if batch != nil {
		t.Fatalf("the red batch landed whole: %+v", batch)
	}
	// After the red top, the batch had at most ⌈log₂ 4⌉ + 1 gate runs:
	// the second look at the top and the bisection.
	runs := b.integrationRuns()
	red := slices.IndexFunc(runs, func(g muster.Event) bool { return !*g.Passed })
	if red < 0 {
		t.Fatalf("no red integration run: %+v", runs)
	}
	batchRuns := 0
	for _, g := range runs[red+1:] {
		if g.Tip == runs[red].Tip { // judged against the batch's tip: the batch's
			batchRuns++
		}
	}
	if bound := engine.BisectSteps(len(others)) + 1; batchRuns > bound {
		t.Fatalf("%d gate runs after the red top, bound %d: %+v", batchRuns, bound, runs)
	}
	if got := sh(t, b.repo, "git", "show", b.ws.Branch()+":"+string(culprit)+".txt"); got != "fixed" {
		t.Fatalf("%s.txt %q on the branch, want its fix", culprit, got)
	}
	if got := sh(t, b.repo, "git", "show", b.ws.Branch()+":"+string(other)+".txt"); got != "bad" {
		t.Fatalf("%s.txt %q on the branch, want it untouched", other, got)
	}
	b.checkBranch(t, gate)
	for _, id := range append(b.others, "z") {
		if s := st.Tasks[id]; s.State != muster.StateSucceeded {
			t.Fatalf("task %s %s: %s", id, s.State, s.Reason)
		}
	}
}

// [run] max_batch = 1 gates each commit on its own: no chain, one gate
// run per commit that is not a fast-forward.
func TestE2EMaxBatchOneGatesEachCommit(t *testing.T) {
	others := []string{"a", "b", "c"}
	b := newBatchRun(t, others, `echo "$MUSTER_TASK_ID" > "$MUSTER_TASK_ID.txt"
`, muster.GateSpec{Name: "files", Command: "test -f README.md"})
	b.opts.Config.Run.MaxBatch = 1
	st := b.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s", st.RunState)
	}
	moves := b.events(muster.EvIntegrating)
	for _, m := range moves {
		if len(m.Chain) > 0 {
			t.Fatalf("a batch with max_batch = 1: %+v", m.Chain)
		}
	}
	if len(moves) != len(others)+1 || len(b.integrationRuns()) != len(others) {
		t.Fatalf("%d moves and %d gate runs, want %d and %d", len(moves), len(b.integrationRuns()), len(others)+1, len(others))
	}
	b.checkBranch(t, "test -f README.md")
}

// holdMoveUntil is the run's workspace with every Advance held until
// open is closed (or a minute passes, so that a run whose crew cannot
// get there fails on its events instead of hanging).
type holdMoveUntil struct {
	*git.Workspace
	open chan struct{}
}

func (h *holdMoveUntil) Advance(ctx context.Context, merged, expected string) error {
	select {
	case <-h.open:
	case <-time.After(time.Minute):
	}
	return h.Workspace.Advance(ctx, merged, expected)
}

// The coder's clone goes back to the crew while its commit waits for
// the integration queue: with one clone, the second task starts there
// (and commits) while the first task's commit is still waiting, and
// both land, each once.
func TestE2ECloneReleasedWhileCommitWaits(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("a", "a.txt"), task("b", "b.txt")}}
	e := newE2E(t, p, map[string]string{}, `echo "$MUSTER_TASK_ID" > "$MUSTER_TASK_ID.txt"
`, "")
	e.opts.Config.Executors[0].Clones = 1
	hold := &holdMoveUntil{Workspace: e.ws, open: make(chan struct{})}
	e.opts.Workspace = hold
	commits := 0
	e.opts.OnEvent = func(ev *muster.Event, _ *engine.State) {
		// The second task's commit: the first one's is still waiting
		// (no move of the branch has been made yet).
		if ev.Type == muster.EvCommitted {
			if commits++; commits == 2 {
				close(hold.open)
			}
		}
	}
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: a %q b %q", st.RunState, st.Tasks["a"].Reason, st.Tasks["b"].Reason)
	}
	var order []string
	for _, ev := range e.j.Snapshot() {
		switch ev.Type {
		case muster.EvExecutorLeased, muster.EvExecutorRelease, muster.EvCommitted, muster.EvIntegrated, muster.EvTaskSucceeded:
			order = append(order, string(ev.Type)+" "+string(ev.Task)+" "+muster.Slot(ev.Executor, ev.Clone))
		}
	}
	first := st.Order[0]
	second := muster.TaskID("b")
	if first == "b" {
		second = "a"
	}
	idx := func(prefix string) int {
		return slices.IndexFunc(order, func(s string) bool { return strings.HasPrefix(s, prefix) })
	}
	firstIntegrated, secondLeased := idx("Integrated "+string(first)), idx("ExecutorLeased "+string(second))
	if secondLeased < 0 || firstIntegrated < 0 || secondLeased > firstIntegrated {
		t.Fatalf("task %s leased no clone while %s's commit waited:\n%s", second, first, strings.Join(order, "\n"))
	}
	if n := len(e.events(muster.EvIntegrated)); n != 2 {
		t.Fatalf("%d Integrated, want 2:\n%s", n, strings.Join(order, "\n"))
	}
	e.checkBranch(t, "true")
}

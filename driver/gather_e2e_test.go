package driver_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/git"
)

// commitBarrier is the run's workspace with the commits of the tasks in
// wave held until all of them are being written: a wave of clones that
// finish together.
type commitBarrier struct {
	*git.Workspace
	mu      sync.Mutex
	wave    map[muster.TaskID]bool
	arrived int
	all     chan struct{}
	late    muster.TaskID // held this much longer after the others
	delay   time.Duration
	// after, when set, is closed once the commits of the wave may be
	// written (else when all of the wave are writing theirs).
	after chan struct{}
}

func (c *commitBarrier) Commit(ctx context.Context, dir, base string, info muster.CommitInfo) (string, error) {
	if c.after != nil && c.wave[info.Task] {
		select {
		case <-c.after:
		case <-time.After(30 * time.Second):
		}
		return c.Workspace.Commit(ctx, dir, base, info)
	}
	if c.wave[info.Task] {
		c.mu.Lock()
		c.arrived++
		if c.arrived == len(c.wave) {
			close(c.all)
		}
		c.mu.Unlock()
		select {
		case <-c.all:
		case <-time.After(30 * time.Second):
		}
		if info.Task == c.late {
			time.Sleep(c.delay)
		}
	}
	return c.Workspace.Commit(ctx, dir, base, info)
}

// waveRun is task z, landed alone first, then a wave of tasks made on
// the base before z that reach the queue together.
func waveRun(t *testing.T, wave []string, gate ...string) (*e2e, *commitBarrier) {
	p := &muster.Plan{Tasks: []*muster.Task{task("z", "z.txt")}}
	for _, id := range wave {
		p.Tasks = append(p.Tasks, task(id, id+".txt"))
	}
	coder := `set -e
if [ "$MUSTER_TASK_ID" != z ]; then
  i=0; while [ ! -f "$SCRIPTS/integrated-z" ]; do i=$((i+1)); [ $i -lt 3000 ] || exit 1; sleep 0.01; done
fi
echo "$MUSTER_TASK_ID" > "$MUSTER_TASK_ID.txt"
`
	g := "sleep 0.2; test -f README.md"
	if len(gate) > 0 {
		g = gate[0]
	}
	e := newE2E(t, p, map[string]string{}, coder, "", muster.GateSpec{Name: "slow", Command: g})
	e.opts.Config.Executors[0].Clones = len(wave) + 1
	e.opts.Overlap = func(a, b []string) bool { return a[0] == b[0] }
	scripts := e.opts.Config.Executors[0].Env["SCRIPTS"]
	c := &commitBarrier{Workspace: e.ws, wave: map[muster.TaskID]bool{}, all: make(chan struct{})}
	for _, id := range wave {
		c.wave[muster.TaskID(id)] = true
	}
	e.opts.Workspace = c
	e.opts.OnEvent = func(ev *muster.Event, _ *engine.State) {
		if ev.Type == muster.EvIntegrated && ev.Task == "z" {
			if err := os.WriteFile(filepath.Join(scripts, "integrated-z"), nil, 0o644); err != nil {
				panic(err)
			}
		}
	}
	return e, c
}

// A wave of commits that reach the queue together shares one gate run:
// the batch of the first waits for the others on their way (their
// commits being written) instead of gating the first alone and making
// the others wait out its gate run.
func TestE2EBatchGathersCommitsOnTheirWay(t *testing.T) {
	driver.SetGatherLimit(t, 20*time.Second) // the bound is not what is tested
	wave := []string{"a", "b", "c", "d"}
	e, _ := waveRun(t, wave)
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s", st.RunState)
	}
	var chains [][]muster.ChainLink
	for _, ev := range e.events(muster.EvIntegrating) {
		chains = append(chains, ev.Chain)
	}
	if len(chains) != 2 || len(chains[1]) != len(wave) {
		t.Fatalf("Integrating chains %+v: want z alone, then one batch of the %d of the wave", chains, len(wave))
	}
	if runs := e.integrationRuns(); len(runs) != 1 {
		t.Fatalf("%d integration gate runs, want one for the wave", len(runs))
	}
	e.checkBranch(t, "test -f README.md")
}

// The wait is bounded: a commit on its way that takes longer than the
// limit goes to the next batch (the others do not wait for it), and
// every task still lands once.
func TestE2EBatchGatherIsBounded(t *testing.T) {
	driver.SetGatherLimit(t, 300*time.Millisecond)
	wave := []string{"a", "b", "c", "d"}
	e, c := waveRun(t, wave)
	c.late, c.delay = "d", 4*time.Second
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s", st.RunState)
	}
	var committed time.Time
	for _, ev := range e.events(muster.EvCommitted) {
		if ev.Task == "d" {
			committed = ev.Time
		}
	}
	moves := e.events(muster.EvIntegrating)
	if len(moves) != 3 || len(moves[1].Chain) != 3 || moves[2].Task != "d" {
		t.Fatalf("moves %+v: want z, the batch of a, b and c, then d", moves)
	}
	if !moves[1].Time.Before(committed) {
		t.Fatalf("the batch of a, b and c moved the branch at %v, after d's commit at %v: it waited past the limit", moves[1].Time, committed)
	}
	e.checkBranch(t, "test -f README.md")
}

// An attempt still in its own gates, due by now (its gates started as
// long ago as gates have taken on average), is waited for too: the
// commits of a, b and c are written once d is in its gates, which take
// it longer, and the four still share one gate run.
func TestE2EBatchGathersAttemptsInTheirGates(t *testing.T) {
	driver.SetGatherLimit(t, 20*time.Second) // the bound is not what is tested
	wave := []string{"a", "b", "c", "d"}
	e, c := waveRun(t, wave, "if [ -f d.txt ] && [ ! -f a.txt ]; then sleep 1; fi; test -f README.md")
	c.after = make(chan struct{})
	var once sync.Once
	on := e.opts.OnEvent
	e.opts.OnEvent = func(ev *muster.Event, st *engine.State) {
		on(ev, st)
		if ev.Type == muster.EvPhase && ev.Phase == "gates" && ev.Task == "d" {
			once.Do(func() { close(c.after) })
		}
	}
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s", st.RunState)
	}
	moves := e.events(muster.EvIntegrating)
	if len(moves) != 2 || len(moves[1].Chain) != len(wave) {
		t.Fatalf("moves %+v: want z alone, then one batch of the %d of the wave", moves, len(wave))
	}
	e.checkBranch(t, "test -f README.md")
}

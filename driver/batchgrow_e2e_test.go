package driver_test

import (
	"context"
	"os"
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

// frozenClock stands still: every batch's first gate run stays young.
type frozenClock struct{ t time.Time }

func (c frozenClock) Now() time.Time { return c.t }

// leapingClock moves an hour a reading: no gate run is ever young.
type leapingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *leapingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Hour)
	return c.t
}

// growRun is an e2e run of z, then a, then b and c: z lands first (a
// fast-forward); a, made on the base, is merged onto z and its batch's
// gate run starts in the queue's clone, where the gate marks its start
// and waits; only then do b and c commit (their coders wait for that
// mark). The gate run in the queue passes once b and c are both queued.
func growRun(t *testing.T) (*e2e, string) {
	p := &muster.Plan{Tasks: []*muster.Task{task("z", "z.txt"), task("a", "a.txt"), task("b", "b.txt"), task("c", "c.txt")}}
	coder := `set -e
wait_for() { i=0; while [ ! -f "$SCRIPTS/$1" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done; }
case "$MUSTER_TASK_ID" in
a) wait_for committed-z ;;
b|c) wait_for gate-started ;;
esac
echo "$MUSTER_TASK_ID" > "$MUSTER_TASK_ID.txt"
`
	// In an attempt (every one starts on the base) the gate passes at
	// once; on a tree with z and a (the queue's) it marks its start and
	// waits.
	gate := `if [ -f z.txt ] && [ -f a.txt ]; then
  echo start >> "$SCRIPTS/queue-starts"; : > "$SCRIPTS/gate-started"
  i=0; while [ ! -f "$SCRIPTS/go" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done
fi
test -f README.md`
	e := newE2E(t, p, map[string]string{}, coder, "", muster.GateSpec{Name: "g", Command: gate})
	e.opts.Config.Executors[0].Clones = 4
	scripts := e.opts.Config.Executors[0].Env["SCRIPTS"]
	t.Setenv("SCRIPTS", scripts) // the gate's environment
	e.opts.Overlap = func(a, b []string) bool {
		for _, x := range a {
			if slices.Contains(b, x) {
				return true
			}
		}
		return false
	}
	var mu sync.Mutex
	queued := map[muster.TaskID]bool{}
	e.opts.OnEvent = func(ev *muster.Event, _ *engine.State) {
		mark := ""
		switch {
		case ev.Type == muster.EvCommitted && ev.Task == "z":
			mark = "committed-z"
		case ev.Type == muster.EvPhase && ev.Phase == "integrating" && (ev.Task == "b" || ev.Task == "c"):
			mu.Lock()
			queued[ev.Task] = true
			if len(queued) == 2 {
				mark = "go"
			}
			mu.Unlock()
		}
		if mark != "" {
			if err := os.WriteFile(filepath.Join(scripts, mark), nil, 0o644); err != nil {
				panic(err)
			}
		}
	}
	return e, scripts
}

// moves returns the tasks each Integrating moved the branch over.
func (e *e2e) moves() []string {
	var out []string
	for _, ev := range e.events(muster.EvIntegrating) {
		ids := []string{string(ev.Task)}
		if len(ev.Chain) > 0 {
			ids = ids[:0]
			for _, l := range ev.Chain {
				ids = append(ids, string(l.Task))
			}
		}
		out = append(out, strings.Join(ids, "+"))
	}
	return out
}

// The commits that arrive while a batch's first gate run is young join
// the batch: the run is cut short, the batch formed again, and one gate
// run (the only one journaled) covers a, b and c.
func TestE2EBatchGrowsWhileItsGateRunIsYoung(t *testing.T) {
	e, scripts := growRun(t)
	e.opts.Clock = frozenClock{time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: %s", st.RunState, reasons(st))
	}
	if got := e.moves(); len(got) != 2 || got[0] != "z" || (got[1] != "a+b+c" && got[1] != "a+c+b") {
		t.Fatalf("moves %q, want z alone, then a+b+c as one batch", got)
	}
	runs := e.integrationRuns()
	if len(runs) != 1 || !*runs[0].Passed {
		t.Fatalf("integration gate runs %+v, want the batch's one", runs)
	}
	starts, err := os.ReadFile(filepath.Join(scripts, "queue-starts"))
	if err != nil || strings.Count(string(starts), "start") < 2 {
		t.Fatalf("gate starts in the queue %q (%v): want the cut run and the batch's", starts, err)
	}
	e.checkBranch(t, "test -f README.md")
}

// A gate run past its young share is never cut: a is gated alone, and b
// and c wait for the next batch.
func TestE2EBatchDoesNotGrowOnceItsGateRunIsOld(t *testing.T) {
	e, _ := growRun(t)
	e.opts.Clock = &leapingClock{t: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: %s", st.RunState, reasons(st))
	}
	got := e.moves()
	if len(got) != 3 || got[0] != "z" || got[1] != "a" || (got[2] != "b+c" && got[2] != "c+b") {
		t.Fatalf("moves %q, want z, a, then b and c", got)
	}
	if runs := e.integrationRuns(); len(runs) != 2 {
		t.Fatalf("%d integration gate runs, want a's and b and c's", len(runs))
	}
	e.checkBranch(t, "test -f README.md")
}

// With max_batch = 1 a batch never grows: each commit is gated alone.
func TestE2EBatchOfOneDoesNotGrow(t *testing.T) {
	e, _ := growRun(t)
	e.opts.Clock = frozenClock{time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	e.opts.Config.Run.MaxBatch = 1
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: %s", st.RunState, reasons(st))
	}
	if got := e.moves(); len(got) != 4 || got[1] != "a" {
		t.Fatalf("moves %q, want z, a, then b and c one by one", got)
	}
	e.checkBranch(t, "test -f README.md")
}

func reasons(st *engine.State) string {
	var b strings.Builder
	for id, ts := range st.Tasks {
		b.WriteString("\n" + string(id) + " " + string(ts.State) + ": " + ts.Reason)
	}
	return b.String()
}

// holdFirstMerge is the run's workspace with its first merge (not a
// fast-forward) onto the chain held until release is closed: the batch it builds is formed,
// and others commit, before its gate run could start.
type holdFirstMerge struct {
	*git.Workspace
	once    sync.Once
	held    func()
	release chan struct{}
}

func (h *holdFirstMerge) MergeOnto(ctx context.Context, onto, commit, base string) (string, []string, error) {
	if onto == base {
		return h.Workspace.MergeOnto(ctx, onto, commit, base) // a fast-forward
	}
	h.once.Do(func() {
		h.held()
		select {
		case <-h.release:
		case <-time.After(time.Minute):
		}
	})
	return h.Workspace.MergeOnto(ctx, onto, commit, base)
}

// Commits that come while a batch is being formed (after its selection,
// before its gate run) make it bigger before the run starts: the one
// gate run in the queue covers a, b and c.
func TestE2EBatchGrowsBeforeItsGateRunStarts(t *testing.T) {
	p := &muster.Plan{Tasks: []*muster.Task{task("z", "z.txt"), task("a", "a.txt"), task("b", "b.txt"), task("c", "c.txt")}}
	coder := `set -e
wait_for() { i=0; while [ ! -f "$SCRIPTS/$1" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.01; done; }
case "$MUSTER_TASK_ID" in
a) wait_for committed-z ;;
b|c) wait_for a-merging ;;
esac
echo "$MUSTER_TASK_ID" > "$MUSTER_TASK_ID.txt"
`
	gate := `if [ -f z.txt ] && [ -f a.txt ]; then echo start >> "$SCRIPTS/queue-starts"; fi
test -f README.md`
	e := newE2E(t, p, map[string]string{}, coder, "", muster.GateSpec{Name: "g", Command: gate})
	e.opts.Config.Executors[0].Clones = 4
	e.opts.Clock = frozenClock{time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
	scripts := e.opts.Config.Executors[0].Env["SCRIPTS"]
	t.Setenv("SCRIPTS", scripts)
	mark := func(name string) {
		if err := os.WriteFile(filepath.Join(scripts, name), nil, 0o644); err != nil {
			panic(err)
		}
	}
	hold := &holdFirstMerge{Workspace: e.ws, release: make(chan struct{}), held: func() { mark("a-merging") }}
	e.opts.Workspace = hold
	e.opts.Overlap = func(a, b []string) bool { return slices.Equal(a, b) }
	var mu sync.Mutex
	queued := map[muster.TaskID]bool{}
	e.opts.OnEvent = func(ev *muster.Event, _ *engine.State) {
		switch {
		case ev.Type == muster.EvCommitted && ev.Task == "z":
			mark("committed-z")
		case ev.Type == muster.EvPhase && ev.Phase == "integrating" && (ev.Task == "b" || ev.Task == "c"):
			mu.Lock()
			if queued[ev.Task] = true; len(queued) == 2 {
				close(hold.release)
			}
			mu.Unlock()
		}
	}
	st := e.run(t)
	if st.RunState != muster.RunSucceeded {
		t.Fatalf("run %s: %s", st.RunState, reasons(st))
	}
	if got := e.moves(); len(got) != 2 || got[0] != "z" || (got[1] != "a+b+c" && got[1] != "a+c+b") {
		t.Fatalf("moves %q, want z alone, then a+b+c as one batch", got)
	}
	starts, err := os.ReadFile(filepath.Join(scripts, "queue-starts"))
	if err != nil || strings.Count(string(starts), "start") != 1 {
		t.Fatalf("gate starts in the queue %q (%v): want the batch's one", starts, err)
	}
	e.checkBranch(t, "test -f README.md")
}

package driver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/mock"
)

// pipeRun is a run of tasks a and b, then late ones: a and b commit on
// the base together, so that the first integration the queue gates has
// b merged (the gated top); the late tasks start only once that gate
// run has started, and it ends only once each late commit has been
// merged meanwhile (into the next batch's chain) or the wait gives up.
// Every merge is logged.
type pipeRun struct {
	h      *harness
	mu     sync.Mutex
	top    string // the first gated top
	merges []merge
	gated  chan struct{} // the first queue gate run started
	linked chan struct{} // each late commit was merged onto top
	late   []muster.TaskID
}

// merge is one MergeOnto call: commit onto onto, and whether the first
// queue gate run was under way.
type merge struct {
	onto, commit, merged string
	conflict, duringGate bool
}

func newPipeRun(t *testing.T, late []string, red func(top, dir string) bool, conflict func(p *pipeRun, onto, commit string) bool) *pipeRun {
	ids := append([]string{"a", "b"}, late...)
	p := &pipeRun{gated: make(chan struct{}), linked: make(chan struct{})}
	pl := plan(ids...)
	for _, id := range ids {
		pl.Task(muster.TaskID(id)).Owns = []string{id}
	}
	for _, id := range late {
		p.late = append(p.late, muster.TaskID(id))
	}
	cfg := crew(len(ids))
	cfg.Gates = []muster.GateSpec{{Name: "suite", Command: "x"}}
	p.h = newHarness(t, pl, cfg)
	h := p.h
	h.opts.Overlap = func(a, b []string) bool {
		return slices.ContainsFunc(a, func(x string) bool { return slices.Contains(b, x) })
	}
	var n int
	h.ws.CommitFn = func(ctx context.Context, dir, base string, info muster.CommitInfo) (string, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		n++
		return fmt.Sprintf("c-%s-%d", info.Task, n), nil
	}
	var pair sync.WaitGroup
	pair.Add(2)
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		switch {
		case req.Round > 0:
		case req.Task.ID == "a" || req.Task.ID == "b":
			pair.Done()
			pair.Wait()
		default:
			select {
			case <-p.gated:
			case <-time.After(30 * time.Second): // the assertions then fail
			}
		}
		return &muster.ExecResult{}, nil
	}
	h.ws.MergeOntoFn = func(ctx context.Context, onto, commit, base string) (string, []string, error) {
		m := merge{onto: onto, commit: commit}
		p.mu.Lock()
		defer p.mu.Unlock()
		select {
		case <-p.gated:
			m.duringGate = p.top != "" && !p.linkedDone()
		default:
		}
		switch {
		case conflict != nil && conflict(p, onto, commit):
			m.conflict = true
		case onto == base:
			m.merged = commit
		default:
			m.merged = mock.MergeID(commit, onto)
		}
		p.merges = append(p.merges, m)
		if m.duringGate && p.allLate() {
			close(p.linked)
		}
		if m.conflict {
			return "", []string{"x"}, nil
		}
		return m.merged, nil, nil
	}
	h.opts.Gates = gateFn(func(dir, name string, n int) (bool, string) {
		top, queue := strings.CutPrefix(dir, "/co/muster-queue@")
		if !queue {
			return true, ""
		}
		p.mu.Lock()
		first := p.top == ""
		if first {
			p.top = top
			close(p.gated)
		}
		p.mu.Unlock()
		if first {
			select {
			case <-p.linked:
			case <-time.After(30 * time.Second): // the assertions then fail
			}
		}
		return red == nil || !red(p.topOf(), top), "red"
	})
	return p
}

func (p *pipeRun) topOf() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.top
}

// linkedDone reports whether every late commit was merged while the
// first gated top was gated. The caller holds p.mu.
func (p *pipeRun) linkedDone() bool {
	select {
	case <-p.linked:
		return true
	default:
		return false
	}
}

// allLate reports whether each late task's commit was merged while the
// first gated top was gated. The caller holds p.mu.
func (p *pipeRun) allLate() bool {
	for _, id := range p.late {
		if !slices.ContainsFunc(p.merges, func(m merge) bool {
			return m.duringGate && strings.HasPrefix(m.commit, "c-"+string(id)+"-")
		}) {
			return false
		}
	}
	return true
}

// mergesOf returns the merges of task id's commits.
func (p *pipeRun) mergesOf(id muster.TaskID) []merge {
	var out []merge
	for _, m := range p.merges {
		if strings.HasPrefix(m.commit, "c-"+string(id)+"-") {
			out = append(out, m)
		}
	}
	return out
}

func (p *pipeRun) run(t *testing.T) []muster.Event {
	t.Helper()
	st, err := p.h.run(t)
	if err != nil || st.RunState != muster.RunSucceeded {
		t.Fatalf("%v %s", err, st.RunState)
	}
	var queue []muster.Event
	for _, g := range events(p.h, muster.EvGateRan) {
		if g.Phase == "integration" {
			queue = append(queue, g)
		}
	}
	return queue
}

// The commits that arrive while a batch is gated are merged onto its top
// then, and the next batch is that chain: its gate run is on the chain
// built during the first one, and no commit is merged twice.
func TestQueueNextBatchUsesTheChainBuiltWhileGated(t *testing.T) {
	p := newPipeRun(t, []string{"c", "d"}, nil, nil)
	queue := p.run(t)
	if len(queue) != 2 || queue[0].Commit != p.top {
		t.Fatalf("queue gate runs %+v: want the first top %s, then the next batch's", queue, p.top)
	}
	var top string
	for _, id := range p.late {
		ms := p.mergesOf(id)
		if len(ms) != 1 || !ms[0].duringGate {
			t.Fatalf("merges of %s: %+v, want one, while the batch before was gated", id, ms)
		}
		if ms[0].onto == p.top {
			continue // the chain's first link
		}
		top = ms[0].merged
	}
	if queue[1].Commit != top {
		t.Fatalf("the second gate ran on %s, want the chain's top %s built while the first was gated", queue[1].Commit, top)
	}
	for _, ev := range events(p.h, muster.EvIntegrated) {
		if slices.Contains(p.late, ev.Task) && ev.Tip != top {
			t.Fatalf("%s integrated at %s, want %s", ev.Task, ev.Tip, top)
		}
	}
}

// A red batch drops the chain prepared on its top: the waiting commits
// are merged again onto the tip that did land, and nothing merged onto
// the red top reaches the run branch.
func TestQueueNextChainDroppedWhenTheBatchIsRed(t *testing.T) {
	p := newPipeRun(t, []string{"c", "d"}, func(top, dir string) bool { return dir == top }, nil)
	p.run(t)
	if len(events(p.h, muster.EvFixRound)) != 1 {
		t.Fatalf("fix rounds %+v, want b's", events(p.h, muster.EvFixRound))
	}
	onRed := map[string]bool{p.top: true}
	for _, m := range p.merges {
		if m.duringGate {
			onRed[m.merged] = true
		}
	}
	for _, id := range p.late {
		ms := p.mergesOf(id)
		if len(ms) < 2 || !ms[0].duringGate || !onRed[ms[0].onto] {
			t.Fatalf("merges of %s: %+v, want one onto the red top %s's chain first, then again", id, ms, p.top)
		}
		if last := ms[len(ms)-1]; last.duringGate || onRed[last.onto] {
			t.Fatalf("merges of %s: %+v, the last one is on the red top", id, ms)
		}
	}
	for _, ev := range events(p.h, muster.EvIntegrated) {
		if ev.Commit == p.top || onRed[ev.Commit] || onRed[ev.Tip] {
			t.Fatalf("%+v: a commit of the dropped chain landed", ev)
		}
	}
}

// A commit that conflicts with the chain being prepared ends it; the
// next batch merges it afresh (a conflict with the next chain is not the
// commit's verdict).
func TestQueueNextChainDroppedOnConflict(t *testing.T) {
	once := false
	p := newPipeRun(t, []string{"c"}, nil, func(p *pipeRun, onto, commit string) bool {
		if once || onto != p.top || !strings.HasPrefix(commit, "c-c-") {
			return false
		}
		once = true
		return true
	})
	queue := p.run(t)
	ms := p.mergesOf("c")
	if len(ms) != 2 || !ms[0].conflict || ms[1].conflict || ms[1].onto != p.top {
		t.Fatalf("merges of c: %+v, want a conflict while gated, then a clean merge onto %s", ms, p.top)
	}
	if len(events(p.h, muster.EvFixRound)) != 0 || len(queue) != 2 || queue[1].Commit != ms[1].merged {
		t.Fatalf("fix rounds %+v, queue gate runs %+v", events(p.h, muster.EvFixRound), queue)
	}
}

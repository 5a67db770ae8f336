// Package mock has func-field mocks of muster's ports, for tests. A nil
// func field gives a harmless default.
package mock

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/muster-run/muster"
)

// Workspace is a muster.Workspace whose behaviour is set per method.
type Workspace struct {
	PrepareFn    func(ctx context.Context, slot string) (string, string, error)
	ChangeFn     func(ctx context.Context, dir, base string) (*muster.Change, error)
	ViolationsFn func(ctx context.Context, dir string, c *muster.Change, owns []string) []string
	RevertFn     func(ctx context.Context, dir, base string, paths []string) error
	DiffFn       func(ctx context.Context, dir, base string) (string, error)
	SummaryFn    func(ctx context.Context, dir, base string) (muster.ChangeSummary, error)
	CommitFn     func(ctx context.Context, dir, base string, info muster.CommitInfo) (string, error)
	IntegrateFn  func(ctx context.Context, commit, base string) (string, []string, error)
	MergeFn      func(ctx context.Context, commit, base string) (string, []string, error)
	MergeOntoFn  func(ctx context.Context, onto, commit, base string) (string, []string, error)
	AdvanceFn    func(ctx context.Context, merged, expectedTip string) error
	CheckoutFn   func(ctx context.Context, slot, commit string) (string, error)
	TipFn        func(ctx context.Context) (string, error)

	mu  sync.Mutex
	tip string
	n   int
}

// Prepare returns "/wt/<slot>" at the current tip by default.
func (w *Workspace) Prepare(ctx context.Context, slot string) (string, string, error) {
	if w.PrepareFn != nil {
		return w.PrepareFn(ctx, slot)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tip == "" {
		w.tip = "base"
	}
	return "/wt/" + slot, w.tip, nil
}

// Change reports one modified file by default.
func (w *Workspace) Change(ctx context.Context, dir, base string) (*muster.Change, error) {
	if w.ChangeFn != nil {
		return w.ChangeFn(ctx, dir, base)
	}
	return &muster.Change{Files: []muster.FileChange{{Path: "f", Status: "M"}}}, nil
}

// Violations reports none by default.
func (w *Workspace) Violations(ctx context.Context, dir string, c *muster.Change, owns []string) []string {
	if w.ViolationsFn != nil {
		return w.ViolationsFn(ctx, dir, c, owns)
	}
	return nil
}

// Revert does nothing by default.
func (w *Workspace) Revert(ctx context.Context, dir, base string, paths []string) error {
	if w.RevertFn != nil {
		return w.RevertFn(ctx, dir, base, paths)
	}
	return nil
}

// Diff returns a diff naming dir and a counter by default, so that every
// round's diff differs.
func (w *Workspace) Diff(ctx context.Context, dir, base string) (string, error) {
	if w.DiffFn != nil {
		return w.DiffFn(ctx, dir, base)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fmt.Sprintf("diff %s %d", dir, w.n), nil
}

// Summary is what Diff returns, counted (muster.PatchStat) and digested,
// by default.
func (w *Workspace) Summary(ctx context.Context, dir, base string) (muster.ChangeSummary, error) {
	if w.SummaryFn != nil {
		return w.SummaryFn(ctx, dir, base)
	}
	d, err := w.Diff(ctx, dir, base)
	if err != nil {
		return muster.ChangeSummary{}, err
	}
	return muster.ChangeSummary{Files: muster.PatchStat(d), Digest: fmt.Sprintf("%x", sha256.Sum256([]byte(d)))}, nil
}

// Commit returns a fresh fake commit by default.
func (w *Workspace) Commit(ctx context.Context, dir, base string, info muster.CommitInfo) (string, error) {
	if w.CommitFn != nil {
		return w.CommitFn(ctx, dir, base, info)
	}
	return "c-" + string(info.Task), nil
}

// Integrate moves the fake tip to the commit by default.
func (w *Workspace) Integrate(ctx context.Context, commit, base string) (string, []string, error) {
	if w.IntegrateFn != nil {
		return w.IntegrateFn(ctx, commit, base)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tip = commit
	return commit, nil, nil
}

// Merge returns commit when the fake tip is base, else MergeID(commit,
// tip), by default.
func (w *Workspace) Merge(ctx context.Context, commit, base string) (string, []string, error) {
	if w.MergeFn != nil {
		return w.MergeFn(ctx, commit, base)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tip == "" {
		w.tip = "base"
	}
	if w.tip == base {
		return commit, nil, nil
	}
	return MergeID(commit, w.tip), nil, nil
}

// MergeID is the default Merge's fake merge commit of commit onto tip:
// "m" and 16 hex digits of a hash of both, so that ids do not grow with
// every integration (a benchmark's journal would measure JSON encoding
// of ever longer ids, not the scheduler).
func MergeID(commit, tip string) string {
	h := fnv.New64a()
	h.Write([]byte(commit + "@" + tip))
	return fmt.Sprintf("m%016x", h.Sum64())
}

// MergeOnto returns commit when onto is base, else MergeID(commit, onto),
// by default. With MergeFn set and MergeOntoFn not, it calls MergeFn
// when onto is the tip and reports a conflict otherwise, so that a test
// written for Merge alone integrates one commit at a time.
func (w *Workspace) MergeOnto(ctx context.Context, onto, commit, base string) (string, []string, error) {
	if w.MergeOntoFn != nil {
		return w.MergeOntoFn(ctx, onto, commit, base)
	}
	if w.MergeFn != nil {
		if tip, _ := w.Tip(ctx); tip == onto {
			return w.MergeFn(ctx, commit, base)
		}
		return "", []string{"(not batched: the test's MergeFn merges onto the tip only)"}, nil
	}
	if onto == base {
		return commit, nil, nil
	}
	return MergeID(commit, onto), nil, nil
}

// Advance moves the fake tip to merged when it is at expectedTip, by
// default.
func (w *Workspace) Advance(ctx context.Context, merged, expectedTip string) error {
	if w.AdvanceFn != nil {
		return w.AdvanceFn(ctx, merged, expectedTip)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tip == "" {
		w.tip = "base"
	}
	if w.tip != expectedTip {
		return fmt.Errorf("run branch at %s, not %s", w.tip, expectedTip)
	}
	w.tip = merged
	return nil
}

// Checkout returns "/co/<slot>@<commit>" by default.
func (w *Workspace) Checkout(ctx context.Context, slot, commit string) (string, error) {
	if w.CheckoutFn != nil {
		return w.CheckoutFn(ctx, slot, commit)
	}
	return "/co/" + slot + "@" + commit, nil
}

// SetTip sets the fake tip (where a resumed run finds the branch).
func (w *Workspace) SetTip(tip string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tip = tip
}

// Tip returns the fake tip by default.
func (w *Workspace) Tip(ctx context.Context) (string, error) {
	if w.TipFn != nil {
		return w.TipFn(ctx)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tip, nil
}

// Close does nothing.
func (w *Workspace) Close(ctx context.Context) error { return nil }

// Executor is a muster.Executor calling ExecuteFn (default: succeed).
type Executor struct {
	ExecuteFn func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error)
}

// Execute calls ExecuteFn.
func (e *Executor) Execute(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
	if e.ExecuteFn != nil {
		return e.ExecuteFn(ctx, req, emit)
	}
	return &muster.ExecResult{}, nil
}

// Journal keeps events in memory.
type Journal struct {
	mu     sync.Mutex
	Events []muster.Event
	// FailAt makes the Nth append (1-based) fail.
	FailAt int
}

// Append records e with the next sequence number.
func (j *Journal) Append(e *muster.Event) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.FailAt > 0 && len(j.Events)+1 == j.FailAt {
		return fmt.Errorf("disk full")
	}
	e.Seq = int64(len(j.Events) + 1)
	j.Events = append(j.Events, *e)
	return nil
}

// Close does nothing.
func (j *Journal) Close() error { return nil }

// Snapshot returns a copy of the events.
func (j *Journal) Snapshot() []muster.Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]muster.Event(nil), j.Events...)
}

// Gates is a muster.GateRunner calling RunFn (default: pass).
type Gates struct {
	RunFn func(ctx context.Context, dir string, g muster.GateSpec, timeout time.Duration) muster.GateResult
}

// Run calls RunFn.
func (g *Gates) Run(ctx context.Context, dir string, spec muster.GateSpec, timeout time.Duration) muster.GateResult {
	if g.RunFn != nil {
		return g.RunFn(ctx, dir, spec, timeout)
	}
	return muster.GateResult{Name: spec.Name, Command: spec.Command, Passed: true}
}

// Clock is a fixed or stepping clock.
type Clock struct {
	mu  sync.Mutex
	T   time.Time
	Inc time.Duration
}

// Now returns T and advances it by Inc.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.T
	c.T = c.T.Add(c.Inc)
	return t
}

// ScratchFree says the executor needs no scratch directory.
func (e *Executor) ScratchFree() {}

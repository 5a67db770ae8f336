package git

import (
	"testing"

	muster "github.com/muster-run/muster"
)

// Merge computes the merged commit without moving the branch; Advance
// moves it only from the expected tip; Checkout shows any commit.
func TestMergeAdvanceCheckout(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	d1, base, _ := w.Prepare(ctx, "a#1")
	d2, _, _ := w.Prepare(ctx, "a#2")
	write(t, d1, "one.txt", "1")
	write(t, d2, "two.txt", "2")
	c1, err := w.Commit(ctx, d1, base, muster.CommitInfo{Run: "r1", Task: "one"})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := w.Commit(ctx, d2, base, muster.CommitInfo{Run: "r1", Task: "two"})
	if err != nil {
		t.Fatal(err)
	}
	m1, conf, err := w.Merge(ctx, c1, base)
	if err != nil || conf != nil || m1 != c1 {
		t.Fatalf("fast-forward merge: %s %v %v", m1, conf, err)
	}
	if tip, _ := w.Tip(ctx); tip != base {
		t.Fatal("Merge moved the branch")
	}
	if err := w.Advance(ctx, m1, base); err != nil {
		t.Fatal(err)
	}
	m2, conf, err := w.Merge(ctx, c2, base)
	if err != nil || conf != nil || m2 == c2 {
		t.Fatalf("merge onto the tip: %s %v %v", m2, conf, err)
	}
	if got := g(t, repo, "rev-parse", m2+"^"); got != c1 {
		t.Fatalf("merged parent %s, want %s", got, c1)
	}
	dir, err := w.Checkout(ctx, "verify", m2)
	if err != nil {
		t.Fatal(err)
	}
	if read(t, dir, "one.txt") != "1" || read(t, dir, "two.txt") != "2" {
		t.Fatal("checkout lacks the merged files")
	}
	if err := w.Advance(ctx, m2, base); err == nil {
		t.Fatal("Advance from a stale tip succeeded")
	}
	if tip, _ := w.Tip(ctx); tip != c1 {
		t.Fatalf("tip %s after a refused advance", tip)
	}
	if err := w.Advance(ctx, m2, c1); err != nil {
		t.Fatal(err)
	}
	if g(t, repo, "rev-parse", w.Branch()) != m2 {
		t.Fatal("branch not advanced")
	}
}

// A chain MergeOnto built on a batch's top while the batch was gated
// (the next batch's, pipelined) can be built on further once that top
// lands; a chain built on a top that did not land cannot.
func TestMergeOntoKeepsTheChainBuiltOnTheNewTip(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	var commits []string
	for _, name := range []string{"one", "two", "three", "four"} {
		d, base, _ := w.Prepare(ctx, name+"#1")
		write(t, d, name+".txt", name)
		c, err := w.Commit(ctx, d, base, muster.CommitInfo{Run: "r1", Task: muster.TaskID(name)})
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, c)
	}
	base := w.Base()
	onto := func(on, c string) string {
		t.Helper()
		m, conf, err := w.MergeOnto(ctx, on, c, base)
		if err != nil || conf != nil {
			t.Fatalf("merge %s onto %s: %v %v", c, on, conf, err)
		}
		return m
	}
	top := onto(base, commits[0])  // the gated batch
	next := onto(top, commits[1])  // the next batch's chain, built meanwhile
	stale := onto(top, commits[2]) // a chain the next batch will not take
	if err := w.Advance(ctx, top, base); err != nil {
		t.Fatal(err)
	}
	last := onto(next, commits[3]) // the batch after builds on the next one's top
	if err := w.Advance(ctx, last, top); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.MergeOnto(ctx, stale, commits[3], base); err == nil {
		t.Fatal("MergeOnto built on a chain that never landed")
	}
	if got := g(t, repo, "rev-parse", last+"^"); got != next {
		t.Fatalf("the last link's parent %s, want %s", got, next)
	}
}

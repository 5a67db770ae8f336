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

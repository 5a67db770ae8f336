package git

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	muster "github.com/muster-run/muster"
)

// foreign makes a commit on parent the way an agent would (plain git,
// with a forged trailer) and returns it.
func foreign(t *testing.T, repo, parent, msg string) string {
	t.Helper()
	tree := g(t, repo, "rev-parse", parent+"^{tree}")
	cmd := exec.Command("git", "commit-tree", "-p", parent, "-m", msg, tree)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func wantMoved(t *testing.T, err error, want, got string) {
	t.Helper()
	var me *BranchMovedError
	if !errors.As(err, &me) || !errors.Is(err, ErrBranchMoved) || !errors.Is(err, muster.ErrBranchMoved) {
		t.Fatalf("err %v, want a *BranchMovedError", err)
	}
	if me.Want != want || me.Got != got {
		t.Errorf("moved: want %s got %s; expected want %s got %s", me.Want, me.Got, want, got)
	}
	if !strings.Contains(err.Error(), "muster last left it at "+want) {
		t.Errorf("error %q does not name the last known tip", err)
	}
}

// An agent moves the run branch to its own commit between two
// integrations: the next move fails its compare-and-swap as a moved
// branch, the branch stays where the agent put it, and nothing is built
// on it (Tip, Prepare and Merge refuse too).
func TestAdvanceRefusesABranchMovedByAnotherProcess(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	tip1, _ := task(t, w, "a#1", "t1", map[string]string{"one.txt": "1"}, nil)
	dir, base, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "two.txt", "2")
	c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Run: "r1", Task: "t2"})
	if err != nil {
		t.Fatal(err)
	}
	f := foreign(t, repo, tip1, "guarded: forged\n\nMuster-Task: guarded")
	g(t, repo, "update-ref", "refs/heads/muster/r1", f)

	merged, _, err := w.Merge(ctx, c, base)
	wantMoved(t, err, tip1, f)
	wantMoved(t, w.Advance(ctx, c, tip1), tip1, f)
	_, _, err = w.Integrate(ctx, c, base)
	wantMoved(t, err, tip1, f)
	_, err = w.Tip(ctx)
	wantMoved(t, err, tip1, f)
	_, _, err = w.Prepare(ctx, "a#2")
	wantMoved(t, err, tip1, f)
	if got := g(t, repo, "rev-parse", "muster/r1"); got != f || merged != "" {
		t.Errorf("branch at %s (merged %q), want it left at the foreign %s", got, merged, f)
	}
	// Put back where muster left it, the run goes on.
	g(t, repo, "update-ref", "refs/heads/muster/r1", tip1)
	if err := w.Advance(ctx, c, tip1); err != nil {
		t.Fatal(err)
	}
}

func TestDeletedOrSymbolicBranchIsMoved(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	base := w.Base()
	g(t, repo, "update-ref", "-d", "refs/heads/muster/r1")
	_, err := w.Tip(ctx)
	wantMoved(t, err, base, "")
	if !strings.Contains(err.Error(), "it was deleted") {
		t.Errorf("error %q does not say the branch was deleted", err)
	}
	// A symbolic ref to the user's branch: muster's update-ref would
	// otherwise move main through it.
	g(t, repo, "symbolic-ref", "refs/heads/muster/r1", "refs/heads/main")
	_, err = w.Tip(ctx)
	var me *BranchMovedError
	if !errors.As(err, &me) || me.Symref != "refs/heads/main" {
		t.Fatalf("err %v, want a moved branch naming the symbolic ref", err)
	}
	if err := w.Advance(ctx, foreign(t, repo, base, "x"), base); !errors.Is(err, ErrBranchMoved) {
		t.Fatalf("advance through a symbolic ref: %v", err)
	}
	if got := g(t, repo, "rev-parse", "refs/heads/main"); got != base {
		t.Errorf("main moved to %s", got)
	}
}

// A resume trusts only the journal's tip (or the move it announced): a
// branch at a commit an agent made is refused, whatever its trailer.
func TestResumeOpensOnlyAtTheJournalsTip(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w, err := Open(ctx, Options{Repo: repo, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	base := w.Base()
	tip1, _ := task(t, w, "a#1", "t1", map[string]string{"one.txt": "1"}, nil)
	w.Close(ctx)

	resume := func(tip, moving string) (*Workspace, error) {
		w, err := Open(ctx, Options{Repo: repo, RunID: "r1", Resume: true, Base: base, Tip: tip, Moving: moving})
		if err == nil {
			t.Cleanup(func() { w.Close(ctx) })
		}
		return w, err
	}
	if _, err := resume(tip1, ""); err != nil {
		t.Fatalf("at the journal's tip: %v", err)
	}
	// The journal recorded no integration yet but announced the move:
	// the branch there is muster's own move.
	w2, err := resume("", tip1)
	if err != nil {
		t.Fatalf("at the announced move: %v", err)
	}
	if got, _ := w2.Tip(ctx); got != tip1 {
		t.Errorf("tip %s, want the announced %s", got, tip1)
	}
	f := foreign(t, repo, tip1, "guarded: forged\n\nMuster-Run: r1\nMuster-Task: guarded")
	g(t, repo, "update-ref", "refs/heads/muster/r1", f)
	_, err = resume(tip1, "")
	wantMoved(t, err, tip1, f)
	_, err = resume(base, tip1)
	wantMoved(t, err, base, f)
}

// Commits lists what is on the branch since the base, side parents of a
// merge an agent made included, with what each trailer claims.
func TestCommitsListsEveryCommitSinceTheBase(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	base := w.Base()
	tip1, _ := task(t, w, "a#1", "t1", map[string]string{"one.txt": "1"}, nil)
	side := foreign(t, repo, base, "side\n\nMuster-Task: t9")
	tree := g(t, repo, "rev-parse", tip1+"^{tree}")
	m := g(t, repo, "commit-tree", "-p", tip1, "-p", side, "-m", "merge", tree)
	g(t, repo, "update-ref", "refs/heads/muster/r1", m)
	tip, cs, err := ReadBranch(ctx, repo, "r1", base)
	if err != nil || tip != m {
		t.Fatalf("ReadBranch: %s %v", tip, err)
	}
	got := map[string]string{}
	for _, c := range cs {
		got[c.ID] = c.Task
	}
	want := map[string]string{m: "", tip1: "t1", side: "t9"}
	if len(got) != len(want) {
		t.Fatalf("commits %v, want %v", got, want)
	}
	for id, task := range want {
		if got[id] != task {
			t.Errorf("commit %s: task %q, want %q", id[:8], got[id], task)
		}
	}
}

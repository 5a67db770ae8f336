package git

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// openGuarded opens a workspace that guards the user's repository.
func openGuarded(t *testing.T, repo string, mode muster.GuardPolicy) *Workspace {
	t.Helper()
	w, err := Open(ctx, Options{Repo: repo, RunID: "g1", Guard: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(ctx) })
	return w
}

// The attacks of issue 11 on the user's repository, made by an agent
// that reaches it (confinement off): each is detected, named and undone.
func TestGuardDetectsAndUndoes(t *testing.T) {
	repo := newRepo(t, baseFiles())
	g(t, repo, "branch", "feature")
	g(t, repo, "tag", "v1")
	write(t, repo, "untracked.txt", "mine\n")
	head := g(t, repo, "rev-parse", "HEAD")
	w := openGuarded(t, repo, GuardRestore)
	dir, _, _ := w.Prepare(ctx, "a#1")
	// An agent commit to point refs at, made in its clone and copied into
	// the user's store as an attacker would (it can write anywhere).
	write(t, dir, "evil.txt", "evil\n")
	g(t, dir, "add", "evil.txt")
	g(t, dir, "commit", "-qm", "evil")
	evil := g(t, dir, "rev-parse", "HEAD")
	g(t, dir, "push", "-q", repo, "HEAD:refs/heads/evil-tmp")
	g(t, repo, "update-ref", "-d", "refs/heads/evil-tmp")

	w.BeginAttempt("a#1")
	if got := w.CheckAttempt(ctx, "a#1"); len(got) != 0 {
		t.Fatalf("clean repository reported: %v", got)
	}
	g(t, repo, "update-ref", "refs/heads/main", evil)
	g(t, repo, "update-ref", "refs/heads/feature", evil)
	g(t, repo, "tag", "-f", "v1", evil)
	g(t, repo, "branch", "sneaky", evil)
	g(t, repo, "config", "core.worktree", "/tmp")
	write(t, repo, ".git/hooks/post-commit", "#!/bin/sh\necho pwned\n")
	write(t, repo, ".git/info/attributes", "* filter=evil\n")
	write(t, repo, ".git/objects/info/alternates", filepath.Join(dir, ".git", "objects")+"\n")
	write(t, repo, ".git/index.lock", "")
	old := time.Now().Add(-10 * time.Second)
	os.Chtimes(filepath.Join(repo, ".git", "index.lock"), old, old)
	got := w.CheckAttempt(ctx, "a#1")
	w.EndAttempt("a#1")
	want := []string{
		"tampered: refs/heads/feature moved (undone)",
		"tampered: refs/heads/main moved (undone)",
		"tampered: refs/heads/sneaky created (undone)",
		"tampered: refs/tags/v1 moved (undone)",
		"tampered: .git/config changed (undone)",
		"tampered: .git/hooks/post-commit added (undone)",
		"tampered: .git/info/attributes added (undone)",
		"tampered: .git/objects/info/alternates added (undone)",
		"tampered: .git/index.lock left (undone)",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d reasons, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	if g(t, repo, "rev-parse", "main") != head || g(t, repo, "rev-parse", "feature") != head || g(t, repo, "rev-parse", "v1") != head {
		t.Error("refs not restored")
	}
	if _, err := gitOut(repo, "rev-parse", "--verify", "-q", "refs/heads/sneaky"); err == nil {
		t.Error("created branch kept")
	}
	if out, _ := gitOut(repo, "config", "core.worktree"); out != "" {
		t.Errorf("core.worktree kept: %s", out)
	}
	for _, f := range []string{"hooks/post-commit", "info/attributes", "objects/info/alternates", "index.lock"} {
		if _, err := os.Stat(filepath.Join(repo, ".git", f)); err == nil {
			t.Errorf("%s kept", f)
		}
	}
	if st := g(t, repo, "status", "--porcelain"); st != "?? untracked.txt" {
		t.Errorf("user status after the undo:\n%s", st)
	}
	// The next check is clean: the snapshot holds.
	w.BeginAttempt("a#1")
	if got := w.CheckAttempt(ctx, "a#1"); len(got) != 0 {
		t.Errorf("after the undo: %v", got)
	}
	// A deleted branch comes back; a changed hook gets its content back.
	write(t, repo, ".git/hooks/pre-push", "#!/bin/sh\nexit 0\n")
	w.EndAttempt("a#1")
	// Found outside an attempt: charged to the caller, and undone.
	if got := w.CheckAttempt(ctx, "x"); len(got) != 1 {
		t.Errorf("outside an attempt: %v", got)
	}
	w.BeginAttempt("a#1")
	g(t, repo, "branch", "-D", "-q", "feature")
	got = w.CheckAttempt(ctx, "a#1")
	if !slices.Contains(got, "tampered: refs/heads/feature deleted (undone)") || g(t, repo, "rev-parse", "feature") != head {
		t.Errorf("deleted branch: %v", got)
	}
	w.EndAttempt("a#1")
}

// What the guard reports but does not undo: HEAD (the user may switch
// branches) and the index's entries; in detect mode nothing is undone.
func TestGuardDetectOnly(t *testing.T) {
	repo := newRepo(t, baseFiles())
	g(t, repo, "branch", "other")
	w := openGuarded(t, repo, GuardDetect)
	w.BeginAttempt("a#1")
	defer w.EndAttempt("a#1")
	g(t, repo, "branch", "-f", "other", "HEAD~0")
	g(t, repo, "symbolic-ref", "HEAD", "refs/heads/other")
	write(t, repo, "new.txt", "x")
	g(t, repo, "add", "new.txt")
	g(t, repo, "status") // rewrites stat data only: not tampering by itself
	got := w.CheckAttempt(ctx, "a#1")
	want := []string{
		"tampered: .git/HEAD changed (was ref: refs/heads/main, now ref: refs/heads/other)",
		"tampered: .git/index changed (staged entries)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if g(t, repo, "symbolic-ref", "HEAD") != "refs/heads/other" {
		t.Error("detect mode undid HEAD")
	}
	// A user's `git status` alone is not tampering.
	g(t, repo, "status")
	if got := w.CheckAttempt(ctx, "a#1"); len(got) != 0 {
		t.Errorf("after git status: %v", got)
	}
}

// Two attempts at once: tampering found while both ran is charged to
// both; one that began after it is not charged.
func TestGuardChargesEveryAttemptUnderWay(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := openGuarded(t, repo, GuardRestore)
	w.BeginAttempt("a#1")
	w.BeginAttempt("b#1")
	write(t, repo, ".git/hooks/pre-commit", "#!/bin/sh\n")
	a := w.CheckAttempt(ctx, "a#1")
	w.BeginAttempt("c#1")
	b := w.CheckAttempt(ctx, "b#1")
	c := w.CheckAttempt(ctx, "c#1")
	if len(a) != 1 || !slices.Equal(a, b) || len(c) != 0 {
		t.Errorf("a %v b %v c %v", a, b, c)
	}
}

// An agent that writes into another task's idle clone: found, charged to
// the attempts under way, and reset by that clone's next Prepare.
func TestGuardFindsWritesIntoAnIdleClone(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := openGuarded(t, repo, GuardRestore)
	w.BeginAttempt("a#1")
	da, _, _ := w.Prepare(ctx, "a#1")
	write(t, da, "mine.txt", "a's own work\n")
	if got := w.CheckAttempt(ctx, "a#1"); len(got) != 0 {
		t.Fatalf("a's own write reported: %v", got)
	}
	w.EndAttempt("a#1")
	w.BeginAttempt("b#1")
	db, _, _ := w.Prepare(ctx, "b#1")
	write(t, db, "b.txt", "b's work\n")
	write(t, da, "src/a.go", "package a // planted by b\n")
	got := w.CheckAttempt(ctx, "b#1")
	want := "tampered: wrote into the clone of a#1, which no task was using (src/a.go)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %v, want %q", got, want)
	}
	w.EndAttempt("b#1")
	w.BeginAttempt("a#1")
	defer w.EndAttempt("a#1")
	da, base, _ := w.Prepare(ctx, "a#1")
	if read(t, da, "src/a.go") != "package a\n" {
		t.Error("the planted file survived Prepare")
	}
	ch, err := w.Change(ctx, da, base)
	if err != nil || !ch.Empty() {
		t.Errorf("a's next change: %v %v", render(ch), err)
	}
}

// A lock a live process holds (the user's own git at work) is not an
// agent's leftover; one nobody holds is.
func TestGuardLeavesLiveLocks(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := openGuarded(t, repo, GuardRestore)
	w.BeginAttempt("a#1")
	defer w.EndAttempt("a#1")
	lock := filepath.Join(repo, ".git", "index.lock")
	f, err := os.Create(lock)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-10 * time.Second)
	os.Chtimes(lock, old, old)
	if got := w.CheckAttempt(ctx, "a#1"); len(got) != 0 {
		t.Errorf("a held lock reported: %v", got)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Error("a held lock was removed")
	}
	f.Close()
	if got := w.CheckAttempt(ctx, "a#1"); len(got) != 1 || got[0] != "tampered: .git/index.lock left (undone)" {
		t.Errorf("the left lock: %v", got)
	}
}

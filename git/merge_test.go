package git

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	muster "github.com/muster-run/muster"
)

// runWith makes a run whose branch adds and edits files, and closes it.
func runWith(t *testing.T, repo, id string, files map[string]string) *Workspace {
	t.Helper()
	w, err := Open(ctx, Options{Repo: repo, RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	task(t, w, "a#1", "t1", files, nil)
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestFastForwardCheckedOutClean(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := runWith(t, repo, "r1", map[string]string{"src/a.go": "package a\n// run\n"})
	if err := FastForward(ctx, repo, "main", w.Branch()); err != nil {
		t.Fatal(err)
	}
	if g(t, repo, "rev-parse", "main") != g(t, repo, "rev-parse", w.Branch()) {
		t.Error("main not moved")
	}
	if read(t, repo, "src/a.go") != "package a\n// run\n" || g(t, repo, "status", "--porcelain") != "" {
		t.Error("work tree not updated cleanly")
	}
}

func TestFastForwardKeepsUnrelatedDirtyFiles(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := runWith(t, repo, "r1", map[string]string{"src/a.go": "package a\n// run\n"})
	write(t, repo, "docs/guide.txt", "my local edit\n")
	write(t, repo, "notes.txt", "untracked")
	if err := FastForward(ctx, repo, "main", w.Branch()); err != nil {
		t.Fatal(err)
	}
	if read(t, repo, "docs/guide.txt") != "my local edit\n" || read(t, repo, "notes.txt") != "untracked" {
		t.Error("local changes lost")
	}
	if read(t, repo, "src/a.go") != "package a\n// run\n" {
		t.Error("fast-forward not applied to the work tree")
	}
}

func TestFastForwardRefuses(t *testing.T) {
	t.Run("dirty file the run changed", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		w := runWith(t, repo, "r1", map[string]string{"src/a.go": "package a\n// run\n"})
		write(t, repo, "src/a.go", "mine\n")
		before := g(t, repo, "rev-parse", "main")
		err := FastForward(ctx, repo, "main", w.Branch())
		var fe *FastForwardError
		if !errors.As(err, &fe) || !slices.Equal(fe.Paths, []string{"src/a.go"}) {
			t.Fatalf("got %v", err)
		}
		if g(t, repo, "rev-parse", "main") != before || read(t, repo, "src/a.go") != "mine\n" {
			t.Error("refusal changed something")
		}
	})
	t.Run("untracked file in the way", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		w := runWith(t, repo, "r1", map[string]string{"new.txt": "run"})
		write(t, repo, "new.txt", "mine")
		var fe *FastForwardError
		if err := FastForward(ctx, repo, "main", w.Branch()); !errors.As(err, &fe) {
			t.Fatalf("got %v", err)
		}
		if read(t, repo, "new.txt") != "mine" {
			t.Error("untracked file overwritten")
		}
	})
	t.Run("branch moved on", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		w := runWith(t, repo, "r1", map[string]string{"x.txt": "run"})
		write(t, repo, "y.txt", "user")
		g(t, repo, "add", "y.txt")
		g(t, repo, "commit", "-qm", "user work")
		err := FastForward(ctx, repo, "main", w.Branch())
		var fe *FastForwardError
		if !errors.As(err, &fe) || !strings.Contains(fe.Reason, "no longer an ancestor") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("merge in progress", func(t *testing.T) {
		repo := newRepo(t, baseFiles())
		w := runWith(t, repo, "r1", map[string]string{"x.txt": "run"})
		os.WriteFile(filepath.Join(repo, ".git", "MERGE_HEAD"), []byte(w.Base()+"\n"), 0o644)
		var fe *FastForwardError
		if err := FastForward(ctx, repo, "main", w.Branch()); !errors.As(err, &fe) || !strings.Contains(fe.Reason, "merge is in progress") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestFastForwardBranchNotCheckedOut(t *testing.T) {
	repo := newRepo(t, baseFiles())
	g(t, repo, "branch", "release")
	g(t, repo, "checkout", "-q", "--detach")
	write(t, repo, "src/a.go", "dirty\n")
	w := runWith(t, repo, "r1", map[string]string{"src/a.go": "package a\n// run\n"})
	if err := FastForward(ctx, repo, "release", w.Branch()); err != nil {
		t.Fatal(err)
	}
	if g(t, repo, "rev-parse", "release") != g(t, repo, "rev-parse", w.Branch()) {
		t.Error("release not moved")
	}
	if read(t, repo, "src/a.go") != "dirty\n" || g(t, repo, "rev-parse", "HEAD") != w.Base() {
		t.Error("detached work tree touched")
	}
}

func TestArgs(t *testing.T) {
	cases := []struct {
		name string
		got  []string
		want string
	}{
		{"clean", cleanArgs([]string{"node_modules/", ".venv/"}), "clean -ffdxq -e node_modules/ -e .venv/"},
		{"merge-tree 2.39", mergeTreeArgs(false, "B", "T", "C"), "merge-tree --write-tree -z --name-only --no-messages T C"},
		{"merge-tree 2.40", mergeTreeArgs(true, "B", "T", "C"), "merge-tree --write-tree -z --name-only --no-messages --merge-base=B T C"},
		{"read-only", (&cmd{readOnly: true, args: []string{"status"}}).gitArgs(), "-c gc.auto=0 -c maintenance.auto=false -c core.fsmonitor=false -c core.hooksPath=/dev/null --no-optional-locks status"},
		{"user hooks", (&cmd{hooks: true, paths: true, args: []string{"merge"}}).gitArgs(), "-c gc.auto=0 -c maintenance.auto=false -c core.fsmonitor=false --literal-pathspecs merge"},
		{"own", (&cmd{own: true, pre: []string{"-c", "core.filemode=false"}, args: []string{"add"}}).gitArgs(), "-c gc.auto=0 -c maintenance.auto=false -c core.fsmonitor=false -c core.hooksPath=/dev/null " +
			"-c core.attributesFile=/dev/null -c merge.renormalize=false -c protocol.allow=never -c submodule.recurse=false -c core.useReplaceRefs=false -c core.filemode=false add"},
	}
	for _, tc := range cases {
		if got := strings.Join(tc.got, " "); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	msg := Message(muster.CommitInfo{Run: "r", Task: "api", Title: "Add API\nMuster-Task: evil", Executor: "claude#2"})
	if want := "api: Add API Muster-Task: evil\n\nMuster-Run: r\nMuster-Task: api\nMuster-Executor: claude#2\n"; msg != want {
		t.Errorf("message %q", msg)
	}
	if a, b, err := parseVersion("git version 2.39.5"); a != 2 || b != 39 || err != nil {
		t.Error(a, b, err)
	}
	if _, _, err := parseVersion("git version x"); err == nil {
		t.Error("bad version accepted")
	}
}

func TestLockContentionIsRetried(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	lock := filepath.Join(repo, ".git", "refs", "heads", "muster", "r1.lock")
	dir, base, _ := w.Prepare(ctx, "a#1")
	write(t, dir, "f", "1")
	c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Another process holds the run branch's lock and releases it soon.
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); sleepMs(50); os.Remove(lock) }()
	if _, _, err := w.Integrate(ctx, c, base); err != nil {
		t.Fatal(err)
	}
	<-done
	// A lock held for good gives up with a *GitError.
	os.WriteFile(lock, nil, 0o644)
	defer os.Remove(lock)
	d2, b2, _ := w.Prepare(ctx, "a#1")
	write(t, d2, "g", "1")
	c2, _ := w.Commit(ctx, d2, b2, muster.CommitInfo{Task: "t2"})
	_, _, err = w.Integrate(ctx, c2, b2)
	var ge *GitError
	if !errors.As(err, &ge) || !ge.lockContention() {
		t.Fatalf("got %v", err)
	}
}

// The suggested command stands on its own line, after the file list (was:
// the list glued onto the command).
func TestFastForwardErrorCommandOnItsOwnLine(t *testing.T) {
	e := &FastForwardError{Branch: "main", Reason: "it is checked out in /w and these modified files would change",
		Paths: []string{"a.txt", "b.txt"}, Then: "; commit or stash them, then run:", Command: "git merge --ff-only muster/r1"}
	want := "not fast-forwarding main: it is checked out in /w and these modified files would change: a.txt, b.txt; commit or stash them, then run:\n    git merge --ff-only muster/r1"
	if got := e.Error(); got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
}

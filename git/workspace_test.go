package git

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	muster "github.com/muster-run/muster"
)

func TestOpen(t *testing.T) {
	repo := newRepo(t, nil)
	head := g(t, repo, "rev-parse", "HEAD")
	sub := filepath.Join(repo, "sub")
	os.Mkdir(sub, 0o755)
	w, err := Open(ctx, Options{Repo: sub, RunID: "20261129-abc"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Base() != head || w.Branch() != "muster/20261129-abc" {
		t.Errorf("base %s branch %s", w.Base(), w.Branch())
	}
	if g(t, repo, "rev-parse", "muster/20261129-abc") != head {
		t.Error("run branch not at base")
	}
	if fi, err := os.Stat(w.RunDir()); err != nil || !fi.IsDir() {
		t.Errorf("run dir: %v", err)
	}
	if want := filepath.Join(repo, ".git", "muster", "runs", "20261129-abc"); w.RunDir() != want {
		t.Errorf("run dir %s, want %s", w.RunDir(), want)
	}
	if id, fb := w.Identity(); id != "Test User <test@example.com>" || fb {
		t.Errorf("identity %s %v", id, fb)
	}
	if _, err := Open(ctx, Options{Repo: repo, RunID: "20261129-abc"}); !errors.Is(err, ErrBranchExists) {
		t.Errorf("second Open of the same run: %v", err)
	}
	if _, err := Open(ctx, Options{Repo: repo, RunID: "other", Resume: true, Base: head}); err == nil {
		t.Error("resume of a run without a branch did not fail")
	}
	w2, err := Open(ctx, Options{Repo: repo, RunID: "20261129-abc", Resume: true, Base: head})
	if err != nil || w2.Base() != head {
		t.Fatalf("resume: %v", err)
	}
	for _, id := range []string{"", "a/b", "../x", "x.lock", "a..b", "-x"} {
		if _, err := Open(ctx, Options{Repo: repo, RunID: id}); err == nil {
			t.Errorf("run id %q accepted", id)
		}
	}
	if _, err := Open(ctx, Options{Repo: t.TempDir(), RunID: "x"}); err == nil {
		t.Error("Open outside a repository did not fail")
	}
}

func TestIdentityFallback(t *testing.T) {
	repo := newRepo(t, nil)
	g(t, repo, "config", "--unset", "user.email")
	w := open(t, repo, "r1")
	if id, fb := w.Identity(); id != "muster <muster@localhost>" || !fb {
		t.Errorf("identity %s %v", id, fb)
	}
	dir, base, _ := w.Prepare(ctx, "a#1")
	write(t, dir, "f", "x")
	c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Run: "r1", Task: "t", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got := g(t, repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", c); got != "muster <muster@localhost>|muster <muster@localhost>" {
		t.Error(got)
	}
}

// task plays one task: prepare, write files, then change, violations,
// commit and integrate.
func task(t testing.TB, w *Workspace, slot string, id string, files map[string]string, owns []string) (tip string, conflicts []string) {
	t.Helper()
	dir, base, err := w.Prepare(ctx, slot)
	if err != nil {
		t.Error(err)
		return
	}
	for n, c := range files {
		write(t, dir, n, c)
	}
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Error(err)
		return
	}
	if v := w.Violations(ctx, dir, ch, owns); len(v) > 0 {
		t.Errorf("task %s: violations %q", id, v)
	}
	c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Run: w.run, Task: muster.TaskID(id), Title: "task " + id, Executor: slot})
	if err != nil {
		t.Error(err)
		return
	}
	tip, conflicts, err = w.Integrate(ctx, c, base)
	if err != nil {
		t.Error(err)
	}
	return tip, conflicts
}

func TestParallelDisjointTasksLand(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "par")
	const n, slots = 16, 4
	jobs := make(chan int)
	var wg sync.WaitGroup
	for s := 1; s <= slots; s++ {
		wg.Add(1)
		go func(slot string) {
			defer wg.Done()
			for i := range jobs {
				id := fmt.Sprintf("t%02d", i)
				_, conf := task(t, w, slot, id, map[string]string{
					"pkg/" + id + "/f.go": "package " + id + "\n",
				}, []string{"pkg/" + id + "/"})
				if len(conf) > 0 {
					t.Errorf("task %s: conflicts %q", id, conf)
				}
			}
		}(fmt.Sprintf("coder#%d", s))
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	tip, _ := w.Tip(ctx)
	files := g(t, repo, "ls-tree", "-r", "--name-only", tip, "pkg/")
	if got := len(strings.Fields(files)); got != n {
		t.Errorf("%d task files on the run branch, want %d:\n%s", got, n, files)
	}
	// Linear history: every commit since base has one parent.
	if merges := g(t, repo, "rev-list", "--merges", w.Base()+".."+tip); merges != "" {
		t.Errorf("merge commits on the run branch: %s", merges)
	}
	tc, err := w.TaskCommits(ctx)
	if err != nil || len(tc) != n {
		t.Errorf("TaskCommits: %d, %v", len(tc), err)
	}
	msg := g(t, repo, "log", "-1", "--format=%B", tc["t03"])
	for _, s := range []string{"t03: task t03", "Muster-Run: par", "Muster-Task: t03", "Muster-Executor: coder#"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message lacks %q:\n%s", s, msg)
		}
	}
}

func TestPrepareCleansAndKeeps(t *testing.T) {
	files := baseFiles()
	files[".gitignore"] = "node_modules/\nbuild/\n"
	repo := newRepo(t, files)
	w := open(t, repo, "r1", "node_modules/")
	dir, _, _ := w.Prepare(ctx, "a#1")
	write(t, dir, "node_modules/dep/index.js", "kept")
	write(t, dir, "build/out.o", "gone")
	write(t, dir, "scratch.txt", "gone")
	write(t, dir, "src/a.go", "edited")
	write(t, dir, "nested/.git/HEAD", "not a repo really")
	os.WriteFile(filepath.Join(dir, g(t, dir, "rev-parse", "--git-dir"), "index.lock"), nil, 0o644)
	if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
		t.Fatal(err)
	}
	if read(t, dir, "node_modules/dep/index.js") != "kept" {
		t.Error("kept file lost")
	}
	for _, p := range []string{"build", "scratch.txt", "nested"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s survived Prepare", p)
		}
	}
	if read(t, dir, "src/a.go") != "package a\n" {
		t.Error("tracked file not reset")
	}
}

func TestPrepareRebuildsDamagedWorktree(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, _, _ := w.Prepare(ctx, "a#1")
	os.RemoveAll(filepath.Join(dir, ".git"))
	write(t, dir, "junk", "x")
	dir2, base, err := w.Prepare(ctx, "a#1")
	if err != nil || dir2 != dir {
		t.Fatal(dir2, err)
	}
	write(t, dir, "src/new.go", "package a\n")
	ch, err := w.Change(ctx, dir, base)
	if err != nil || render(ch) != "A src/new.go" {
		t.Errorf("change after rebuild: %v %v", render(ch), err)
	}
	// An agent that points the worktree at the user's repository.
	before := userSnapshot(t, repo)
	os.RemoveAll(filepath.Join(dir, ".git"))
	write(t, dir, ".git", "gitdir: "+filepath.Join(repo, ".git")+"\n")
	if _, _, err := w.Prepare(ctx, "a#1"); err != nil {
		t.Fatal(err)
	}
	if got := g(t, dir, "rev-parse", "--path-format=absolute", "--git-dir"); got != filepath.Join(dir, ".git") {
		t.Errorf("clone git dir %s", got)
	}
	if fi, err := os.Lstat(filepath.Join(dir, ".git")); err != nil || !fi.IsDir() {
		t.Errorf("clone .git is not a directory: %v", err)
	}
	if after := userSnapshot(t, repo); after != before {
		t.Errorf("user's repository changed:\n%s\n%s", before, after)
	}
}

func TestConflictLeavesBranchIntact(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	d1, base1, _ := w.Prepare(ctx, "a#1")
	d2, base2, _ := w.Prepare(ctx, "a#2")
	write(t, d1, "src/a.go", "package a\n// from one\n")
	write(t, d1, "one.txt", "1")
	write(t, d2, "src/a.go", "package a\n// from two\n")
	write(t, d2, "two.txt", "2")
	c1, err := w.Commit(ctx, d1, base1, muster.CommitInfo{Run: "r1", Task: "one"})
	if err != nil {
		t.Fatal(err)
	}
	c2, err := w.Commit(ctx, d2, base2, muster.CommitInfo{Run: "r1", Task: "two"})
	if err != nil {
		t.Fatal(err)
	}
	tip1, conf, err := w.Integrate(ctx, c1, base1)
	if err != nil || conf != nil || tip1 != c1 {
		t.Fatalf("first integrate: %s %v %v", tip1, conf, err)
	}
	tip2, conf, err := w.Integrate(ctx, c2, base2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(conf, []string{"src/a.go"}) {
		t.Errorf("conflicts %q", conf)
	}
	if now, _ := w.Tip(ctx); now != tip1 || tip2 != tip1 {
		t.Errorf("branch moved on conflict: %s", now)
	}
	// Retried on the new tip, the task lands.
	d2, base2, _ = w.Prepare(ctx, "a#2")
	write(t, d2, "src/a.go", "package a\n// from one\n// from two\n")
	c2, _ = w.Commit(ctx, d2, base2, muster.CommitInfo{Run: "r1", Task: "two"})
	if _, conf, err := w.Integrate(ctx, c2, base2); err != nil || conf != nil {
		t.Fatal(conf, err)
	}
}

func TestIntegrateRewritesOntoTip(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	d1, b1, _ := w.Prepare(ctx, "a#1")
	d2, b2, _ := w.Prepare(ctx, "a#2")
	write(t, d1, "one.txt", "1")
	write(t, d2, "two.txt", "2")
	c1, _ := w.Commit(ctx, d1, b1, muster.CommitInfo{Run: "r1", Task: "one", Title: "first"})
	c2, _ := w.Commit(ctx, d2, b2, muster.CommitInfo{Run: "r1", Task: "two", Title: "second"})
	w.Integrate(ctx, c1, b1)
	tip, conf, err := w.Integrate(ctx, c2, b2)
	if err != nil || conf != nil {
		t.Fatal(conf, err)
	}
	if tip == c2 || g(t, repo, "rev-parse", tip+"^") != c1 {
		t.Error("second commit not rewritten onto the first")
	}
	if a, b := g(t, repo, "log", "-1", "--format=%an%ae%ad%B", c2), g(t, repo, "log", "-1", "--format=%an%ae%ad%B", tip); a != b {
		t.Errorf("author or message changed:\n%s\n%s", a, b)
	}
	if got := g(t, repo, "ls-tree", "--name-only", tip); !strings.Contains(got, "one.txt") || !strings.Contains(got, "two.txt") {
		t.Error(got)
	}
	d3, b3, _ := w.Prepare(ctx, "a#1")
	if _, err := w.Commit(ctx, d3, b3, muster.CommitInfo{Task: "x"}); !errors.Is(err, ErrNoChange) {
		t.Errorf("empty commit: %v", err)
	}
}

// userSnapshot records the user's side of the repository: HEAD, branches
// other than muster's, index bytes, status and file contents.
func userSnapshot(t *testing.T, repo string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(g(t, repo, "symbolic-ref", "HEAD") + "\n")
	b.WriteString(g(t, repo, "rev-parse", "HEAD") + "\n")
	for _, l := range strings.Split(g(t, repo, "for-each-ref", "refs/heads/", "refs/tags/"), "\n") {
		if !strings.Contains(l, "refs/heads/muster/") {
			b.WriteString(l + "\n")
		}
	}
	idx, _ := os.ReadFile(filepath.Join(repo, ".git", "index"))
	fmt.Fprintf(&b, "index %x\n", idx)
	b.WriteString(g(t, repo, "status", "--porcelain", "--ignored") + "\n")
	filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %q\n", p, c)
		}
		return nil
	})
	return b.String()
}

func TestUserTreeUntouched(t *testing.T) {
	files := baseFiles()
	files[".gitignore"] = "*.log\n"
	repo := newRepo(t, files)
	g(t, repo, "branch", "feature")
	write(t, repo, "src/a.go", "package a\n// dirty, unstaged\n")
	write(t, repo, "src/b.go", "staged\n")
	g(t, repo, "add", "src/b.go")
	write(t, repo, "untracked.txt", "mine")
	write(t, repo, "debug.log", "ignored")
	before := userSnapshot(t, repo)
	w, err := Open(ctx, Options{Repo: repo, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	task(t, w, "a#1", "t1", map[string]string{"src/a.go": "package a\n// agent\n", "untracked.txt": "agent's"}, nil)
	task(t, w, "a#2", "t2", map[string]string{"new.txt": "n"}, nil)
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if after := userSnapshot(t, repo); after != before {
		t.Errorf("user's repository changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestCloseKeepsClonesForTheNextRun(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w, err := Open(ctx, Options{Repo: repo, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	task(t, w, "a#1", "t1", map[string]string{"x": "1"}, nil)
	task(t, w, "b#1", "t2", map[string]string{"y": "1"}, nil)
	d1, d2 := w.slots["a#1"].dir, w.slots["b#1"].dir
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := g(t, repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees in the user's repository:\n%s", got)
	}
	for _, d := range []string{d1, d2} {
		if strings.HasPrefix(d, repo) {
			t.Errorf("clone %s inside the repository", d)
		}
		if _, err := os.Stat(filepath.Join(d, ".git", "objects", "info", "alternates")); err != nil {
			t.Errorf("clone %s gone after Close: %v", d, err)
		}
	}
	checkNoLocks(t, repo)
	if g(t, repo, "rev-parse", "muster/r1") == w.Base() {
		t.Error("run branch lost its commits")
	}
	// The next run takes the same clones again, at its own base.
	w2 := open(t, repo, "r2")
	d, base, err := w2.Prepare(ctx, "c#1")
	if err != nil || (d != d1 && d != d2) {
		t.Fatalf("second run's clone %s (had %s, %s): %v", d, d1, d2, err)
	}
	if head := g(t, d, "rev-parse", "HEAD"); head != base {
		t.Errorf("HEAD %s, want %s", head, base)
	}
	if st := g(t, d, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("reused clone not clean:\n%s", st)
	}
}

func checkNoLocks(t *testing.T, repo string) {
	t.Helper()
	filepath.WalkDir(filepath.Join(repo, ".git"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".lock") {
			t.Errorf("lock file left: %s", p)
		}
		return nil
	})
}

func TestPruneStaleRemovesLegacyWorktrees(t *testing.T) {
	repo := newRepo(t, baseFiles())
	// Worktrees where older versions of muster kept them.
	legacy := func(run, name string) string {
		d := filepath.Join(repo, ".git", "muster", "wt", run, name)
		g(t, repo, "worktree", "add", "--detach", "-q", d)
		return d
	}
	legacy("dead", "a-1")
	legacy("dead", "a-2")
	ldir := legacy("live", "a-1")
	os.MkdirAll(filepath.Join(repo, ".git", "refs", "heads", "muster"), 0o755)
	os.WriteFile(filepath.Join(repo, ".git", "refs", "heads", "muster", "dead.lock"), nil, 0o644)
	if err := PruneStale(ctx, repo, func(id string) bool { return id == "live" }); err != nil {
		t.Fatal(err)
	}
	list := g(t, repo, "worktree", "list", "--porcelain")
	if strings.Contains(list, "/dead/") || !strings.Contains(list, ldir) {
		t.Errorf("after prune:\n%s", list)
	}
	if _, err := os.Stat(ldir); err != nil {
		t.Error("live worktree removed")
	}
	checkNoLocks(t, repo)
	// Without legacy worktrees it does nothing (no git worktree prune).
	if err := PruneStale(ctx, newRepo(t, nil), func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrateKeepsForeignAuthor(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	d1, b1, _ := w.Prepare(ctx, "a#1")
	write(t, d1, "one.txt", "1")
	c1, _ := w.Commit(ctx, d1, b1, muster.CommitInfo{Run: "r1", Task: "one"})
	// A task commit made by an earlier process (resume): not in memory.
	tree := g(t, repo, "rev-parse", b1+"^{tree}")
	cmd := exec.Command("git", "commit-tree", "-p", b1, "-m", "two: old\n\nMuster-Task: two", tree)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Old", "GIT_AUTHOR_EMAIL=old@example.com", "GIT_AUTHOR_DATE=1600000000 +0200")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	c2 := strings.TrimSpace(string(out))
	w.Integrate(ctx, c1, b1)
	tip, _, err := w.Integrate(ctx, c2, b1)
	if err != nil {
		t.Fatal(err)
	}
	if got := g(t, repo, "log", "-1", "--format=%an <%ae> %ad|%cn|%s", "--date=raw", tip); got != "Old <old@example.com> 1600000000 +0200|Test User|two: old" {
		t.Error(got)
	}
	tc, _ := w.TaskCommits(ctx)
	if tc["two"] != tip || tc["one"] != c1 {
		t.Errorf("TaskCommits %v", tc)
	}
}

func TestCommitRecordsTheCheckedChange(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	write(t, dir, "src/a.go", "checked\n")
	if _, err := w.Change(ctx, dir, base); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "late.txt", "written by a gate after the check")
	c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Task: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got := g(t, repo, "diff-tree", "-r", "--name-only", "--no-commit-id", c); got != "src/a.go" {
		t.Errorf("committed %q", got)
	}
	// Without a Change since Prepare, Commit computes the change itself.
	dir, base, _ = w.Prepare(ctx, "a#1")
	write(t, dir, "b.txt", "b")
	c, _ = w.Commit(ctx, dir, base, muster.CommitInfo{Task: "t"})
	if got := g(t, repo, "diff-tree", "-r", "--name-only", "--no-commit-id", c); got != "b.txt" {
		t.Errorf("committed %q", got)
	}
}

func TestResumeAfterCrash(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w, err := Open(ctx, Options{Repo: repo, RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	tip1, _ := task(t, w, "a#1", "t1", map[string]string{"one.txt": "1"}, nil)
	dir, _, _ := w.Prepare(ctx, "a#1")
	write(t, dir, "half-done.txt", "the agent was killed")
	// The process dies: locks left behind, no Close (the kernel drops
	// its leases on the clones).
	os.WriteFile(filepath.Join(repo, ".git", "refs", "heads", "muster", "r1.lock"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, g(t, dir, "rev-parse", "--git-dir"), "index.lock"), nil, 0o644)
	crash(w)

	w2, err := Open(ctx, Options{Repo: repo, RunID: "r1", Resume: true, Base: w.Base(), Tip: tip1})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := w2.TaskCommits(ctx)
	if err != nil || tc["t1"] == "" {
		t.Fatalf("TaskCommits %v %v", tc, err)
	}
	dir2, base, err := w2.Prepare(ctx, "a#1")
	if err != nil || dir2 != dir {
		t.Fatal(dir2, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "half-done.txt")); err == nil {
		t.Error("the dead attempt's file survived Prepare")
	}
	write(t, dir, "two.txt", "2")
	c, err := w2.Commit(ctx, dir, base, muster.CommitInfo{Run: "r1", Task: "t2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w2.Integrate(ctx, c, base); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkNoLocks(t, repo)
}

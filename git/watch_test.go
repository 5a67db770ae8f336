package git

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	muster "github.com/muster-run/muster"
)

// fullChange computes the change with a fresh index and a full scan, the
// reference the watcher's fast path must agree with.
func fullChange(t *testing.T, dir, base string) string {
	t.Helper()
	tree := gitTree(t, dir, base)
	ch, err := parseNameStatus([]byte(g(t, dir, "diff-tree", "-r", "-M", "--name-status", "-z", base, tree) + "\x00"))
	if err != nil {
		t.Fatal(err)
	}
	return render(ch)
}

// checkPrepared fails unless the worktree is exactly tip: HEAD detached
// there, index and files equal to it, nothing untracked or ignored
// except kept paths.
func checkPrepared(t *testing.T, dir, tip, keep string) {
	t.Helper()
	if h := g(t, dir, "rev-parse", "HEAD"); h != tip {
		t.Fatalf("HEAD %s, want %s", h, tip)
	}
	if _, err := gitOut(dir, "symbolic-ref", "-q", "HEAD"); err == nil {
		t.Fatal("HEAD on a branch")
	}
	for _, l := range strings.Split(g(t, dir, "status", "--porcelain", "--ignored", "--untracked-files=all"), "\n") {
		if l != "" && (keep == "" || !strings.Contains(l, keep)) {
			t.Fatalf("worktree not clean after Prepare: %q", l)
		}
	}
}

func TestWatcherAgreesWithFullScan(t *testing.T) {
	files := baseFiles()
	files[".gitignore"] = "build/\nnode_modules/\n*.log\n"
	for i := 0; i < 30; i++ {
		files[fmt.Sprintf("pkg/p%d/f%d.go", i%5, i)] = fmt.Sprintf("package p\n// %d\n", i)
	}
	repo := newRepo(t, files)
	w := open(t, repo, "r1", "node_modules/")
	rng := rand.New(rand.NewSource(1))
	ops := []func(dir string, n int){
		func(dir string, n int) { write(t, dir, pick(rng, dir), fmt.Sprintf("edit %d\n", n)) },
		func(dir string, n int) { write(t, dir, fmt.Sprintf("pkg/p%d/new%d.go", n%5, n), "new\n") },
		func(dir string, n int) { write(t, dir, fmt.Sprintf("fresh%d/a/b/c.txt", n), "deep\n") },
		func(dir string, n int) { os.Remove(filepath.Join(dir, pick(rng, dir))) },
		func(dir string, n int) { os.RemoveAll(filepath.Join(dir, fmt.Sprintf("pkg/p%d", n%5))) },
		func(dir string, n int) {
			p := pick(rng, dir)
			os.Rename(filepath.Join(dir, p), filepath.Join(dir, p+".moved"))
		},
		func(dir string, n int) { os.Chmod(filepath.Join(dir, pick(rng, dir)), 0o755) },
		func(dir string, n int) {
			p := filepath.Join(dir, pick(rng, dir))
			os.Remove(p)
			os.Symlink("README.md", p)
		},
		func(dir string, n int) { write(t, dir, fmt.Sprintf("build/out%d.o", n), "ignored") },
		func(dir string, n int) { write(t, dir, fmt.Sprintf("x%d.log", n), "ignored") },
		func(dir string, n int) { write(t, dir, fmt.Sprintf("node_modules/m%d/index.js", n), "kept") },
		func(dir string, n int) {
			write(t, dir, fmt.Sprintf("tmp%d.txt", n), "short-lived")
			os.Remove(filepath.Join(dir, fmt.Sprintf("tmp%d.txt", n)))
		},
		func(dir string, n int) { os.MkdirAll(filepath.Join(dir, fmt.Sprintf("empty%d/sub", n)), 0o755) },
		func(dir string, n int) {
			p := filepath.Join(dir, pick(rng, dir))
			os.Remove(p)
			write(t, dir, strings.TrimPrefix(p, dir+"/")+"/inner.txt", "file became a directory")
		},
		func(dir string, n int) { g(t, dir, "commit", "-qam", "agent commit", "--allow-empty") },
		func(dir string, n int) {
			os.Rename(filepath.Join(dir, "docs"), filepath.Join(dir, fmt.Sprintf("docs%d", n)))
		},
		func(dir string, n int) { write(t, dir, ".gitignore", "build/\n") },
	}
	for round := 0; round < 40; round++ {
		dir, base, err := w.Prepare(ctx, "a#1")
		if err != nil {
			t.Fatal(err)
		}
		checkPrepared(t, dir, base, "node_modules")
		for k := 0; k <= rng.Intn(4); k++ {
			ops[rng.Intn(len(ops))](dir, round*10+k)
		}
		ch, err := w.Change(ctx, dir, base)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := render(ch), fullChange(t, dir, base); got != want {
			t.Fatalf("round %d: watcher change\n %s\nfull scan\n %s", round, got, want)
		}
		if round%4 == 1 {
			// A gate runs after the check: build output, a reformatted file.
			write(t, dir, "build/gate.out", "gate")
			write(t, dir, pick(rng, dir), "reformatted\n")
		}
		if round%3 == 0 && !ch.Empty() {
			c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Task: muster.TaskID(fmt.Sprint("t", round))})
			if err != nil {
				t.Fatal(err)
			}
			if _, conf, err := w.Integrate(ctx, c, base); err != nil || conf != nil {
				t.Fatal(conf, err)
			}
		}
	}
	if w.watch && (w.fastStages.Load() == 0 || w.fastResets.Load() == 0) {
		t.Errorf("the watcher was never used: fast stages %d, fast resets %d", w.fastStages.Load(), w.fastResets.Load())
	}
	t.Logf("stages fast %d (in process %d) full %d; resets fast %d full %d", w.fastStages.Load(), w.inProcessStages.Load(), w.fullStages.Load(), w.fastResets.Load(), w.fullResets.Load())
}

// pick returns a tracked file of the worktree.
func pick(rng *rand.Rand, dir string) string {
	out, _ := gitOut(dir, "ls-files")
	files := strings.Fields(out)
	var cands []string
	for _, f := range files {
		if f != ".gitignore" {
			if fi, err := os.Lstat(filepath.Join(dir, f)); err == nil && fi.Mode().IsRegular() {
				cands = append(cands, f)
			}
		}
	}
	if len(cands) == 0 {
		return "README.md"
	}
	return cands[rng.Intn(len(cands))]
}

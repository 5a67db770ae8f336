package git

import (
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The bounds no Owns lifts (issue 21, items 6 and 10), each attacked by
// an "agent" writing into its clone with real git, through the
// watcher's record and through a full staging alike.
func TestBoundsNoOwnsLifts(t *testing.T) {
	for _, watch := range []bool{true, false} {
		name := "watcher"
		if !watch {
			name = "full"
		}
		t.Run(name, func(t *testing.T) {
			repo := newRepo(t, map[string]string{
				"README.md": "r\n", "ci/muster.toml": "[run]\n", "plans/p.md": "## [ ] a: A\n",
				"bin/agent.sh": "#!/bin/sh\n", "scripts/check.sh": "#!/bin/sh\n", "Makefile": "test:\n",
			})
			w, err := Open(ctx, Options{Repo: repo, RunID: "b1", NoWatch: !watch, MaxFileBytes: 1000,
				Reserved:  []string{"ci/muster.toml", "plans/p.md", "bin/agent.sh"},
				GateFiles: []string{"scripts/check.sh", "Makefile"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close(ctx) })
			dir, base, err := w.Prepare(ctx, "a#1")
			if err != nil {
				t.Fatal(err)
			}
			// A second repository with a commit, for gitlinks.
			other := newRepo(t, nil)
			for _, f := range []string{"ci/muster.toml", "plans/p.md", "bin/agent.sh", "scripts/check.sh", "Makefile"} {
				write(t, dir, f, "changed\n")
			}
			write(t, dir, "sub/.git", "gitdir: "+filepath.Join(other, ".git")+"\n")
			write(t, dir, "sub/f.txt", "f\n")
			g(t, dir, "init", "-q", "nested")
			write(t, dir, "nested/n.txt", "n\n")
			g(t, filepath.Join(dir, "nested"), "add", "n.txt")
			g(t, filepath.Join(dir, "nested"), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "n")
			write(t, dir, "big.bin", strings.Repeat("x", 1001))
			write(t, dir, "small.bin", strings.Repeat("x", 1000))
			ch, err := w.Change(ctx, dir, base)
			if err != nil {
				t.Fatal(err)
			}
			owns := []string{"ci/", "plans/", "bin/", "scripts/*", "Makefile", "sub/", "nested/", "*.bin"}
			got := sorted(w.Violations(ctx, dir, ch, owns))
			want := []string{"big.bin", "bin/agent.sh", "ci/muster.toml", "nested/.git", "plans/p.md", "scripts/check.sh", "sub/.git"}
			if !slices.Equal(got, want) {
				t.Fatalf("violations\n got %q\nwant %q", got, want)
			}
			// No gitlink and no oversize file is staged.
			tree := g(t, repo, "ls-tree", "-r", w.snapFor(t, dir).tree)
			if strings.Contains(tree, "160000") || strings.Contains(tree, "big.bin") || !strings.Contains(tree, "small.bin") {
				t.Errorf("staged tree:\n%s", tree)
			}
			// Owned by name, a gate's file may change.
			if v := w.Violations(ctx, dir, ch, []string{"scripts/check.sh", "Makefile"}); slices.Contains(v, "scripts/check.sh") || slices.Contains(v, "Makefile") {
				t.Errorf("gate files owned by name refused: %q", v)
			}
			// Reverted, the gitfile and the nested repository are gone and
			// their files are plain files of the change.
			if err := w.Revert(ctx, dir, base, got); err != nil {
				t.Fatal(err)
			}
			ch, err = w.Change(ctx, dir, base)
			if err != nil {
				t.Fatal(err)
			}
			if v := w.Violations(ctx, dir, ch, owns); len(v) > 0 {
				t.Errorf("after revert: %q", v)
			}
			if r := render(ch); r != "A nested/n.txt; A small.bin; A sub/f.txt; M Makefile" {
				t.Errorf("after revert: %s", r)
			}
		})
	}
}

// snapFor returns the change last computed for the clone at dir.
func (w *Workspace) snapFor(t *testing.T, dir string) *snapshot {
	t.Helper()
	s := w.byDir[filepath.Clean(dir)]
	if s == nil || s.snap == nil {
		t.Fatal("no change computed")
	}
	return s.snap
}

// A 4 GB sparse file is refused by its stat data: staging never reads
// it (BenchmarkStageSparse measures the time and memory).
func TestSparseFileNeverStaged(t *testing.T) {
	repo := newRepo(t, nil)
	w := open(t, repo, "sp")
	dir, base, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	sparse(t, filepath.Join(dir, "huge.img"), 4<<30)
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if v := w.Violations(ctx, dir, ch, nil); !slices.Equal(v, []string{"huge.img"}) {
		t.Fatalf("violations %q", v)
	}
	if d, err := w.Diff(ctx, dir, base); err != nil || d != "" {
		t.Errorf("diff %q, %v", d, err)
	}
}

// BenchmarkStageSparse stages a clone holding a 3 GB sparse file (issue
// 21's benchmark "staging a 3 GB sparse file: time and peak memory"):
// the file is refused by its stat data, so neither time nor memory grows
// with its size. It reports the peak resident memory of git's processes
// (child-maxrss-MB) and of this process (self-maxrss-MB).
//
//	go test ./git -run '^$' -bench BenchmarkStageSparse -benchtime 5x
func BenchmarkStageSparse(b *testing.B) {
	repo := newRepo(b, nil)
	w := open(b, repo, "bsp")
	for i := 0; i < b.N; i++ {
		dir, base, err := w.Prepare(ctx, "a#1")
		if err != nil {
			b.Fatal(err)
		}
		sparse(b, filepath.Join(dir, "huge.img"), 3<<30)
		ch, err := w.Change(ctx, dir, base)
		if err != nil {
			b.Fatal(err)
		}
		if v := w.Violations(ctx, dir, ch, nil); !slices.Equal(v, []string{"huge.img"}) {
			b.Fatalf("violations %q", v)
		}
	}
	b.StopTimer()
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	b.ReportMetric(float64(kids.Maxrss)/1024, "child-maxrss-MB")
	b.ReportMetric(float64(self.Maxrss)/1024, "self-maxrss-MB")
}

// sparse makes a sparse file of size bytes at p (skipping where the file
// system has none).
func sparse(t testing.TB, p string, size int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Skip("no sparse files here:", err)
	}
}

// BenchmarkStageLargeFile stages a 64 MB file of random bytes, under
// max_file_bytes: git streams it into the object store, so its memory
// (child-maxrss-MB) stays flat in the file's size.
//
//	go test ./git -run '^$' -bench BenchmarkStageLargeFile -benchtime 3x
func BenchmarkStageLargeFile(b *testing.B) {
	repo := newRepo(b, nil)
	w := open(b, repo, "blf")
	for i := 0; i < b.N; i++ {
		dir, base, err := w.Prepare(ctx, "a#1")
		if err != nil {
			b.Fatal(err)
		}
		// Written as a stream: this process stays small, so what
		// child-maxrss-MB shows is git's.
		f, err := os.Create(filepath.Join(dir, "large.bin"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.CopyN(f, rand.Reader, 64<<20); err != nil {
			b.Fatal(err)
		}
		f.Close()
		ch, err := w.Change(ctx, dir, base)
		if err != nil {
			b.Fatal(err)
		}
		if render(ch) != "A large.bin" {
			b.Fatalf("change %s", render(ch))
		}
	}
	b.StopTimer()
	var kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	b.ReportMetric(float64(kids.Maxrss)/1024, "child-maxrss-MB")
}

package git

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Export writes the staged change, tracked files only, into a fresh
// directory: the coder's untracked and ignored files are not there.
func TestExportIsTheStagedTree(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n", ".gitignore": "build/\n"})
	w := open(t, repo, "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	write(t, dir, "a.txt", "changed\n")
	write(t, dir, "new.txt", "new\n")
	write(t, dir, "build/out.o", "junk\n")
	dest := filepath.Join(t.TempDir(), "tree")
	if err := w.Export(ctx, dir, base, dest); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a.txt": "changed\n", "new.txt": "new\n", ".gitignore": "build/\n"} {
		if got := read(t, dest, name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "build")); err == nil {
		t.Error("an ignored directory was exported")
	}
	if _, err := os.Stat(filepath.Join(dest, ".git")); err == nil {
		t.Error("a .git was exported")
	}
	if err := w.Export(ctx, dir, base, dest); err == nil {
		t.Error("an existing destination was reused")
	}
}

// The cost of a reviewer's clean checkout, per review round: one
// Export of a repository of MUSTER_BENCH_FILES files (default 50,000).
//
//	go test ./git -run '^$' -bench BenchmarkExportReviewTree -benchtime 5x
func BenchmarkExportReviewTree(b *testing.B) {
	nfiles := envInt("MUSTER_BENCH_FILES", 50000)
	repo := genRepo(b, nfiles)
	w, err := Open(ctx, Options{Repo: repo, RunID: "export"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(ctx)
	dir, base, err := w.Prepare(ctx, "a#1")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "changed.txt"), []byte("x\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if _, err := w.Change(ctx, dir, base); err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dest := filepath.Join(root, fmt.Sprint(i))
		if err := w.Export(ctx, dir, base, dest); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(dest)
		b.StartTimer()
	}
	b.ReportMetric(float64(nfiles), "files")
}

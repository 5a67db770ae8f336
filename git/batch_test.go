package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestBatchReadsObjects(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 16<<10) // beyond the read buffer
	repo := newRepo(t, map[string]string{"a.txt": "alpha\n", "big.txt": big})
	b := NewBatch(repo)
	defer b.Close()
	ctx := context.Background()
	head := g(t, repo, "rev-parse", "HEAD")
	if oid, err := b.Resolve(ctx, "HEAD"); err != nil || oid != head {
		t.Fatalf("Resolve HEAD = %q, %v; want %s", oid, err, head)
	}
	info, data, err := b.Contents(ctx, head+":a.txt")
	if err != nil || info.Type != "blob" || info.Size != 6 || string(data) != "alpha\n" {
		t.Fatalf("a.txt: %+v %q %v", info, data, err)
	}
	_, data, err = b.Contents(ctx, "HEAD:big.txt")
	if err != nil || string(data) != big {
		t.Fatalf("big.txt: %d bytes, %v", len(data), err)
	}
	info, err = b.Info(ctx, "HEAD^{tree}")
	if err != nil || info.Type != "tree" || info.OID != g(t, repo, "rev-parse", "HEAD^{tree}") {
		t.Fatalf("tree: %+v %v", info, err)
	}
	// After one that is missing, the stream is still in step.
	var me *MissingError
	if _, err := b.Info(ctx, "HEAD:nope"); !errors.As(err, &me) || me.Reason != "missing" {
		t.Fatalf("missing: %v", err)
	}
	infos, err := b.InfoMany(ctx, []string{"HEAD", "HEAD:nope", "HEAD:a.txt"})
	if err != nil || infos[0].OID != head || infos[1].OID != "" || infos[1].Type != "missing" || infos[2].Type != "blob" {
		t.Fatalf("InfoMany: %+v %v", infos, err)
	}
	if _, err := b.Info(ctx, "HEAD\ninfo HEAD"); err == nil {
		t.Fatal("a name with a newline was sent")
	}
	if n, _ := b.Stats(); n != 1 {
		t.Fatalf("%d processes for one store, want 1", n)
	}
}

func TestBatchSeesObjectsWrittenLater(t *testing.T) {
	repo := newRepo(t, nil)
	b := NewBatch(repo)
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Resolve(ctx, "HEAD"); err != nil {
		t.Fatal(err)
	}
	write(t, repo, "n.txt", "new\n")
	g(t, repo, "add", "n.txt")
	g(t, repo, "commit", "-q", "-m", "second")
	_, data, err := b.Contents(ctx, g(t, repo, "rev-parse", "HEAD")+":n.txt")
	if err != nil || string(data) != "new\n" {
		t.Fatalf("%q %v", data, err)
	}
}

func TestBatchConcurrentUse(t *testing.T) {
	files := map[string]string{}
	for i := 0; i < 20; i++ {
		files[fmt.Sprintf("f%02d", i)] = fmt.Sprintf("content %d\n", i)
	}
	repo := newRepo(t, files)
	b := NewBatch(repo)
	defer b.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 20*10)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for k := 0; k < 10; k++ {
				_, data, err := b.Contents(context.Background(), fmt.Sprintf("HEAD:f%02d", i))
				if err == nil && string(data) != fmt.Sprintf("content %d\n", i) {
					err = fmt.Errorf("f%02d read %q", i, data)
				}
				if err != nil {
					errs <- err
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, _ := b.Stats(); n != 1 {
		t.Fatalf("%d processes, want 1", n)
	}
}

func TestBatchRestartsWhenItDies(t *testing.T) {
	repo := newRepo(t, nil)
	b := NewBatch(repo)
	defer b.Close()
	ctx := context.Background()
	if _, err := b.Resolve(ctx, "HEAD"); err != nil {
		t.Fatal(err)
	}
	pid := b.pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	oid, err := b.Resolve(ctx, "HEAD")
	if err != nil || oid != g(t, repo, "rev-parse", "HEAD") {
		t.Fatalf("after the kill: %q %v", oid, err)
	}
	if n, _ := b.Stats(); n != 2 || b.pid() == pid {
		t.Fatalf("%d starts, pid %d (was %d): not restarted", n, b.pid(), pid)
	}
}

func TestBatchCancelledAndClosed(t *testing.T) {
	repo := newRepo(t, nil)
	b := NewBatch(repo)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Resolve(ctx, "HEAD"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := b.Resolve(context.Background(), "HEAD"); err != nil {
		t.Fatalf("after a cancelled request: %v", err)
	}
	b.Close()
	if _, err := b.Resolve(context.Background(), "HEAD"); !errors.Is(err, ErrBatchClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestWorkspaceBatchReadsTheRunsObjects(t *testing.T) {
	repo := newRepo(t, nil)
	w := open(t, repo, "r1")
	ctx := context.Background()
	tip, err := w.Tip(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := w.Batch().Info(ctx, tip)
	if err != nil || info.OID != tip || info.Type != "commit" {
		t.Fatalf("%+v %v", info, err)
	}
	w.Close(ctx)
	if _, err := w.Batch().Info(ctx, tip); !errors.Is(err, ErrBatchClosed) {
		t.Fatalf("after the workspace closed: %v", err)
	}
}

// Revert asks the run's long-lived reader which paths the base has: no
// ls-tree process, and the result is the same.
func TestRevertAsksTheLongLivedReader(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n", "d/b.txt": "b\n"})
	w := open(t, repo, "r1")
	ctx := context.Background()
	dir, base, err := w.Prepare(ctx, "a#1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "a.txt", "changed\n")
	write(t, dir, "new.txt", "new\n")
	write(t, dir, "d/b.txt", "changed\n")
	if err := w.Revert(ctx, dir, base, []string{"a.txt", "new.txt", "d/b.txt"}); err != nil {
		t.Fatal(err)
	}
	if read(t, dir, "a.txt") != "a\n" || read(t, dir, "d/b.txt") != "b\n" {
		t.Fatalf("not restored: %q %q", read(t, dir, "a.txt"), read(t, dir, "d/b.txt"))
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Fatal("new.txt, not at the base, is still there")
	}
	if n, _ := w.Batch().Stats(); n != 1 {
		t.Fatalf("the reader started %d times, want 1", n)
	}
}

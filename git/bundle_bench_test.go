package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkBundle measures what a fleet task moves on a generated
// repository of MUSTER_BENCH_FILES files (50,000): the bundle of the run
// branch tip to a worker (incremental against the tips the worker got
// before), the worker's checkout, and the bundle of the task's commit
// back, over MUSTER_BENCH_TASKS tasks (20) that each change two files. It
// reports the first task apart (a full bundle and a full checkout) and
// the medians of the others.
//
//	go test -run '^$' -bench BenchmarkBundle -benchtime 1x ./git
func BenchmarkBundle(b *testing.B) {
	nfiles := envInt("MUSTER_BENCH_FILES", 50000)
	ntasks := envInt("MUSTER_BENCH_TASKS", 20)
	repo := genRepo(b, nfiles)
	ctx := context.Background()
	for it := 0; it < b.N; it++ {
		tmp := b.TempDir()
		h := &Host{Root: filepath.Join(tmp, "host")}
		tip := g(b, repo, "rev-parse", "main")
		root, err := RootCommit(ctx, repo, tip)
		if err != nil {
			b.Fatal(err)
		}
		type sample struct {
			outBytes, backBytes                int64
			out, receive, checkout, back, take time.Duration
		}
		var ss []sample
		for i := 0; i < ntasks; i++ {
			if i > 0 {
				tip = commitChange(b, repo, tip, i, nfiles)
			}
			var s sample
			out := filepath.Join(tmp, fmt.Sprintf("out%d.bundle", i))
			t0 := time.Now()
			if err := WriteBundle(ctx, repo, tip, h.Tips(ctx, root), out); err != nil {
				b.Fatal(err)
			}
			s.out = time.Since(t0)
			s.outBytes = fileSize(out)
			t0 = time.Now()
			if _, err := h.Receive(ctx, root, out); err != nil {
				b.Fatal(err)
			}
			s.receive = time.Since(t0)
			t0 = time.Now()
			dir, err := h.Checkout(ctx, root, "bench", 1, tip)
			if err != nil {
				b.Fatal(err)
			}
			s.checkout = time.Since(t0)
			agent(dir, i, nfiles)
			back := filepath.Join(tmp, fmt.Sprintf("back%d.bundle", i))
			t0 = time.Now()
			commit, changed, err := h.Result(ctx, root, "bench", 1, tip, back)
			if err != nil || !changed {
				b.Fatalf("result: %v %v", changed, err)
			}
			s.back = time.Since(t0)
			s.backBytes = fileSize(back)
			t0 = time.Now()
			if got, _, err := ReadBundle(ctx, repo, back); err != nil || got != commit {
				b.Fatalf("read back: %s %v", got, err)
			}
			s.take = time.Since(t0)
			ss = append(ss, s)
			os.Remove(out)
			os.Remove(back)
		}
		first := ss[0]
		b.Logf("first task: bundle out %d bytes in %v; receive %v; checkout %v; back %d bytes in %v; take %v",
			first.outBytes, first.out.Round(time.Millisecond), first.receive.Round(time.Millisecond), first.checkout.Round(time.Millisecond),
			first.backBytes, first.back.Round(time.Millisecond), first.take.Round(time.Millisecond))
		rest := ss[1:]
		med := func(f func(sample) time.Duration) time.Duration {
			v := make([]time.Duration, len(rest))
			for i, s := range rest {
				v[i] = f(s)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		medB := func(f func(sample) int64) int64 {
			v := make([]int64, len(rest))
			for i, s := range rest {
				v[i] = f(s)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		b.Logf("later tasks (median of %d): bundle out %d bytes in %v; receive %v; checkout %v; back %d bytes in %v; take %v; load %s",
			len(rest), medB(func(s sample) int64 { return s.outBytes }), med(func(s sample) time.Duration { return s.out }).Round(100*time.Microsecond),
			med(func(s sample) time.Duration { return s.receive }).Round(100*time.Microsecond), med(func(s sample) time.Duration { return s.checkout }).Round(100*time.Microsecond),
			medB(func(s sample) int64 { return s.backBytes }), med(func(s sample) time.Duration { return s.back }).Round(100*time.Microsecond),
			med(func(s sample) time.Duration { return s.take }).Round(100*time.Microsecond), loadavg())
		b.ReportMetric(float64(first.outBytes), "first-out-B")
		b.ReportMetric(float64(medB(func(s sample) int64 { return s.outBytes })), "out-B/task")
		b.ReportMetric(float64(medB(func(s sample) int64 { return s.backBytes })), "back-B/task")
		b.ReportMetric(float64((med(func(s sample) time.Duration { return s.out })+med(func(s sample) time.Duration { return s.receive })+
			med(func(s sample) time.Duration { return s.back })+med(func(s sample) time.Duration { return s.take })).Microseconds())/1000, "bundle-ms/task")
	}
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return st.Size()
}

// commitChange makes, with plumbing only, a commit on parent that
// changes two files (as an integrated task does).
func commitChange(b *testing.B, repo, parent string, i, nfiles int) string {
	b.Helper()
	idx := filepath.Join(b.TempDir(), "index")
	env := []string{"GIT_INDEX_FILE=" + idx}
	run1 := func(stdin string, args ...string) string {
		c := cmd{dir: repo, args: args, env: env}
		if stdin != "" {
			c.stdin = []byte(stdin)
		}
		out, err := line(context.Background(), c)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	run1("", "read-tree", parent)
	for k, p := range []string{benchFile((i*104729 + 1) % nfiles), "tasks/run" + fmt.Sprint(i) + ".txt"} {
		blob := run1(fmt.Sprintf("integrated change %d.%d\n", i, k), "hash-object", "-w", "--stdin")
		run1("", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+p)
	}
	tree := run1("", "write-tree")
	return strings.TrimSpace(run1(fmt.Sprintf("task %d\n", i), "-c", "user.name=b", "-c", "user.email=b@b", "commit-tree", "-p", parent, "-F", "-", tree))
}

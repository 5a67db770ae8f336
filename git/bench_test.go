package git

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	muster "github.com/muster-run/muster"
)

// Benchmark sizes; override with environment variables.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// genRepo writes a repository of n files in one commit with git
// fast-import (about a second for 50,000 files); the user's work tree is
// left unpopulated, which muster never reads.
func genRepo(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	g(b, dir, "init", "-q", "-b", "main")
	g(b, dir, "config", "user.name", "Bench")
	g(b, dir, "config", "user.email", "bench@example.com")
	c := exec.Command("git", "fast-import", "--quiet")
	c.Dir = dir
	in, _ := c.StdinPipe()
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(in, 1<<20)
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("file %d\nsome content for a generated file of the benchmark repository\n", i)
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n%s\n", i+1, len(body), body)
	}
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter Bench <bench@example.com> 1700000000 +0000\ndata 9\ngenerate\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "M 100644 :%d %s\n", i+1, benchFile(i))
	}
	w.WriteString("\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	in.Close()
	if err := c.Wait(); err != nil {
		b.Fatal(err)
	}
	return dir
}

func benchFile(i int) string { return fmt.Sprintf("src/d%03d/f%04d.txt", i%500, i/500) }

// benchTask is one task's git work; it returns the time spent in git
// (the simulated agent's writes are excluded).
type benchStep func(ctx context.Context, w *Workspace, slot string, i int) (time.Duration, error)

// pooledTask uses the worktree pool: Prepare + change + owns check +
// commit + integrate.
func pooledTask(nfiles int) benchStep {
	return func(ctx context.Context, w *Workspace, slot string, i int) (time.Duration, error) {
		t0 := time.Now()
		dir, base, err := w.Prepare(ctx, slot)
		if err != nil {
			return 0, err
		}
		d1 := time.Since(t0)
		agent(dir, i, nfiles)
		t1 := time.Now()
		err = finish(ctx, w, dir, base, slot, i, nfiles)
		return d1 + time.Since(t1), err
	}
}

// naiveTask adds a fresh worktree per task and removes it afterwards.
func naiveTask(nfiles int) benchStep {
	return func(ctx context.Context, w *Workspace, slot string, i int) (time.Duration, error) {
		t0 := time.Now()
		base, err := w.Tip(ctx)
		if err != nil {
			return 0, err
		}
		dir := filepath.Join(w.common, "muster", "naive", fmt.Sprintf("t%d", i))
		if _, err := run(ctx, cmd{dir: w.top, args: []string{"worktree", "add", "--detach", "--quiet", dir, base}}); err != nil {
			return 0, err
		}
		d1 := time.Since(t0)
		agent(dir, i, nfiles)
		t1 := time.Now()
		if err := finish(ctx, w, dir, base, slot, i, nfiles); err != nil {
			return 0, err
		}
		_, err = run(ctx, cmd{dir: w.top, args: []string{"worktree", "remove", "--force", dir}})
		return d1 + time.Since(t1), err
	}
}

// agent edits one existing file and adds one.
func agent(dir string, i, nfiles int) {
	p := filepath.Join(dir, benchFile((i*7919)%nfiles))
	os.WriteFile(p, []byte(fmt.Sprintf("edited by task %d\n", i)), 0o644)
	os.MkdirAll(filepath.Join(dir, "tasks"), 0o755)
	os.WriteFile(filepath.Join(dir, "tasks", fmt.Sprintf("t%d.txt", i)), []byte("new\n"), 0o644)
}

func finish(ctx context.Context, w *Workspace, dir, base, slot string, i, nfiles int) error {
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		return err
	}
	if len(ch.Files) != 2 {
		return fmt.Errorf("task %d: change %v", i, ch.Files)
	}
	if v := w.Violations(ctx, dir, ch, []string{benchFile((i * 7919) % nfiles), "tasks/t" + strconv.Itoa(i) + ".txt"}); len(v) > 0 {
		return fmt.Errorf("task %d: violations %v", i, v)
	}
	id := fmt.Sprintf("t%d", i)
	c, err := w.Commit(ctx, dir, base, muster.CommitInfo{Run: w.run, Task: muster.TaskID(id), Title: id, Executor: slot})
	if err != nil {
		return err
	}
	_, conf, err := w.Integrate(ctx, c, base)
	if len(conf) > 0 {
		return fmt.Errorf("task %d: conflicts %v", i, conf)
	}
	return err
}

// runTasks runs n tasks over clones workers and returns each task's git
// time.
func runTasks(b *testing.B, w *Workspace, n, clones int, step benchStep) (wall, cpu []time.Duration) {
	jobs := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := 1; c <= clones; c++ {
		wg.Add(1)
		go func(slot string) {
			defer wg.Done()
			for i := range jobs {
				var n atomic.Int64
				d, err := step(WithCPUCounter(context.Background(), &n), w, slot, i)
				if err != nil {
					b.Error(err)
					continue
				}
				mu.Lock()
				wall = append(wall, d)
				cpu = append(cpu, time.Duration(n.Load()))
				mu.Unlock()
			}
		}(fmt.Sprintf("bench#%d", c))
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	slices.Sort(wall)
	slices.Sort(cpu)
	return wall, cpu
}

func pct(ts []time.Duration, p float64) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	return ts[int(float64(len(ts)-1)*p+0.5)]
}

// dirBytes returns the apparent size of the files under dirs and the
// disk space allocated to them (blocks, directories included).
func dirBytes(dirs ...string) (size, alloc int64) {
	for _, d := range dirs {
		filepath.WalkDir(d, func(_ string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if fi, err := e.Info(); err == nil {
				if !e.IsDir() {
					size += fi.Size()
				}
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					alloc += st.Blocks * 512
				}
			}
			return nil
		})
	}
	return size, alloc
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

// BenchmarkGitOverhead measures muster's git work per task (Prepare +
// Change + Violations + Commit + Integrate, no agent) on a generated
// repository: MUSTER_BENCH_TASKS tasks (200) over MUSTER_BENCH_CLONES
// clones (4) on MUSTER_BENCH_FILES files (50,000), beside the naive way
// (git worktree add + remove per task, MUSTER_BENCH_NAIVE tasks, 8).
// MUSTER_BENCH_NOWATCH=1 measures the pool without the touched-path
// record (a full scan at every Prepare and Change).
// Run: go test -run '^$' -bench GitOverhead -benchtime 1x ./git
func BenchmarkGitOverhead(b *testing.B) {
	nfiles := envInt("MUSTER_BENCH_FILES", 50000)
	ntasks := envInt("MUSTER_BENCH_TASKS", 200)
	nnaive := envInt("MUSTER_BENCH_NAIVE", 8)
	if os.Getenv("MUSTER_BENCH_NAIVE") == "0" {
		nnaive = 0 // skip the naive part
	}
	clones := envInt("MUSTER_BENCH_CLONES", 4)
	t0 := time.Now()
	repo := genRepo(b, nfiles)
	b.Logf("generated %d files in %v; load average %s", nfiles, time.Since(t0).Round(time.Millisecond), loadavg())
	for it := 0; it < b.N; it++ {
		w, err := Open(ctx, Options{Repo: repo, RunID: fmt.Sprintf("pool-%d", it), NoWatch: os.Getenv("MUSTER_BENCH_NOWATCH") != ""})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		var wg sync.WaitGroup
		for c := 1; c <= clones; c++ { // create the pool: once per run
			wg.Add(1)
			go func(slot string) {
				defer wg.Done()
				if _, _, err := w.Prepare(ctx, slot); err != nil {
					b.Error(err)
				}
			}(fmt.Sprintf("bench#%d", c))
		}
		wg.Wait()
		create := time.Since(t1)
		pooled, pooledCPU := runTasks(b, w, ntasks, clones, pooledTask(nfiles))
		size, alloc := dirBytes(filepath.Join(w.pool.dir, "clones"))
		b.Logf("resets: %d with the watcher's record, %d full; stagings: %d with the record, %d full",
			w.fastResets.Load(), w.fullResets.Load(), w.fastStages.Load(), w.fullStages.Load())
		if err := w.Close(ctx); err != nil {
			b.Fatal(err)
		}
		load := loadavg()

		nw, err := Open(ctx, Options{Repo: repo, RunID: fmt.Sprintf("naive-%d", it)})
		if err != nil {
			b.Fatal(err)
		}
		naive, naiveCPU := runTasks(b, nw, nnaive, clones, naiveTask(nfiles))
		nw.Close(ctx)

		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		med, nmed := pct(pooled, 0.5), pct(naive, 0.5)
		b.ReportMetric(ms(med), "median-ms")
		b.ReportMetric(ms(pct(pooled, 0.95)), "p95-ms")
		b.ReportMetric(ms(pct(pooledCPU, 0.5)), "cpu-median-ms")
		b.ReportMetric(ms(nmed), "naive-median-ms")
		b.ReportMetric(ms(pct(naiveCPU, 0.5)), "naive-cpu-median-ms")
		b.ReportMetric(float64(nmed)/float64(med), "ratio")
		b.ReportMetric(float64(alloc)/(1<<20), "pool-disk-MiB")
		b.ReportMetric(ms(create), "pool-create-ms")
		b.Logf("%d files, %d tasks over %d clones: median %v p95 %v (git CPU median %v p95 %v); "+
			"naive (%d tasks): median %v p95 %v (git CPU median %v); ratio %.1fx; "+
			"pool after %d tasks: %d bytes of files, %d bytes on disk; pool creation %v; load average after the pooled run %s",
			nfiles, ntasks, clones, med, pct(pooled, 0.95), pct(pooledCPU, 0.5), pct(pooledCPU, 0.95),
			nnaive, nmed, pct(naive, 0.95), pct(naiveCPU, 0.5), float64(nmed)/float64(med),
			ntasks, size, alloc, create, load)
	}
}

// BenchmarkGuardCheck measures the guard's snapshot and compare per
// attempt (BeginAttempt, CheckAttempt, EndAttempt) on the generated
// repository with an index of every file, 200 branches and 100 tags
// (half of them packed) and git's sample hooks. It reports the median and
// p95 of one check.
// Run: go test -run '^$' -bench GuardCheck -benchtime 2000x ./git
func BenchmarkGuardCheck(b *testing.B) {
	nfiles := envInt("MUSTER_BENCH_FILES", 50000)
	repo := genRepo(b, nfiles)
	g(b, repo, "read-tree", "HEAD") // the user's index: every file
	for i := 0; i < 200; i++ {
		g(b, repo, "branch", fmt.Sprintf("b%03d", i))
		if i < 100 {
			g(b, repo, "tag", fmt.Sprintf("t%03d", i))
		}
		if i == 100 {
			g(b, repo, "pack-refs", "--all")
		}
	}
	w, err := Open(ctx, Options{Repo: repo, RunID: "guard", Guard: GuardRestore})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close(ctx)
	ts := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		w.BeginAttempt("a#1")
		if got := w.CheckAttempt(ctx, "a#1"); len(got) > 0 {
			b.Fatal(got)
		}
		w.EndAttempt("a#1")
		ts = append(ts, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(ts)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(pct(ts, 0.5)), "median-ms")
	b.ReportMetric(ms(pct(ts, 0.95)), "p95-ms")
	b.Logf("%d files, %d checks: median %v, p95 %v; load average %s", nfiles, len(ts), pct(ts, 0.5), pct(ts, 0.95), loadavg())
}

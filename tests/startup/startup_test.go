// Package startup measures how long `muster run` takes to start its first
// agent on a large repository: the first run (the clone is made) and the
// second (the clone is reused), beside one `git worktree add`.
package startup

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func run(b *testing.B, dir string, env []string, name string, args ...string) {
	b.Helper()
	c := exec.Command(name, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	if out, err := c.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// genRepo makes a repository of n files in one commit (git fast-import)
// and checks it out, as a user's repository is.
func genRepo(b *testing.B, dir string, n int) {
	run(b, dir, nil, "git", "init", "-q", "-b", "main")
	c := exec.Command("git", "fast-import", "--quiet")
	c.Dir = dir
	in, _ := c.StdinPipe()
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
		fmt.Fprintf(w, "M 100644 :%d src/d%03d/f%04d.txt\n", i+1, i%500, i/500)
	}
	fmt.Fprintf(w, "M 100644 inline muster.toml\ndata <<EOF\n[run]\nconfine = \"off\"\n[executors.sh]\nkind = \"command\"\nclones = 1\ncommand = [\"sh\", \"-c\", \"date +%%s%%N > $STAMP\"]\nEOF\n\n")
	w.Flush()
	in.Close()
	if err := c.Wait(); err != nil {
		b.Fatal(err)
	}
	run(b, dir, nil, "git", "checkout", "-q", "-f", "main")
}

// BenchmarkTimeToFirstAgent measures, on a repository of
// MUSTER_BENCH_FILES files (50,000), the time from starting `muster run`
// to its first agent's start: on the first run (empty cache: the clone is
// made) and on later runs (the clone is reused), beside one `git worktree
// add` of the same repository. MUSTER_BENCH_ROUNDS (3) rounds of each.
// Confinement is off (the agent writes its start time outside its clone);
// its cost per start is measured on its own (BENCHMARKS.md).
// Run: go test -run '^$' -bench TimeToFirstAgent -benchtime 1x -timeout 60m ./tests/startup
func BenchmarkTimeToFirstAgent(b *testing.B) {
	nfiles := envInt("MUSTER_BENCH_FILES", 50000)
	rounds := envInt("MUSTER_BENCH_ROUNDS", 3)
	tmp := b.TempDir()
	bin := filepath.Join(tmp, "muster")
	_, here, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", bin, "./cmd/muster")
	build.Dir = filepath.Join(filepath.Dir(here), "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	repo := filepath.Join(tmp, "repo")
	os.Mkdir(repo, 0o755)
	genRepo(b, repo, nfiles)
	plan := filepath.Join(tmp, "plan.md")
	os.WriteFile(plan, []byte("# Plan: start\n\n## [ ] t: Touch\nOwns: t.txt\n\nNothing.\n"), 0o644)
	stamp := filepath.Join(tmp, "stamp")
	env := []string{"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "STAMP=" + stamp, "NO_COLOR=1",
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@b", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@b"}
	start := func(cache, id string) time.Duration {
		os.Remove(stamp)
		c := exec.Command(bin, "run", plan, "--run-id", id, "--plain")
		c.Dir = repo
		c.Env = append(append(os.Environ(), env...), "XDG_CACHE_HOME="+cache)
		t0 := time.Now()
		out, _ := c.CombinedOutput() // the task fails (no change): only its start counts
		b, err := os.ReadFile(stamp)
		if err != nil {
			panic(fmt.Sprintf("no agent start: %s", out))
		}
		ns, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Unix(0, ns).Sub(t0)
	}
	var first, second, add []time.Duration
	for r := 0; r < rounds; r++ {
		cache := filepath.Join(tmp, fmt.Sprintf("cache%d", r))
		first = append(first, start(cache, fmt.Sprintf("first%d", r)))
		second = append(second, start(cache, fmt.Sprintf("second%d", r)))
		wt := filepath.Join(tmp, fmt.Sprintf("wt%d", r))
		t0 := time.Now()
		run(b, repo, env, "git", "worktree", "add", "-q", "--detach", wt)
		add = append(add, time.Since(t0))
		run(b, repo, env, "git", "worktree", "remove", "--force", wt)
		os.RemoveAll(cache)
	}
	med := func(ts []time.Duration) time.Duration {
		s := slices.Clone(ts)
		slices.Sort(s)
		return s[len(s)/2]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(med(first)), "first-run-ms")
	b.ReportMetric(ms(med(second)), "second-run-ms")
	b.ReportMetric(ms(med(add)), "worktree-add-ms")
	b.ReportMetric(float64(med(second))/float64(med(add)), "second/add")
	la, _ := os.ReadFile("/proc/loadavg")
	b.Logf("%d files, %d rounds: first run %v %v, second run %v %v, git worktree add %v %v; second/add %.3f; load average %s",
		nfiles, rounds, med(first), first, med(second), second, med(add), add, float64(med(second))/float64(med(add)), strings.TrimSpace(string(la)))
}

package fleet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/fleet"
	"github.com/muster-run/muster/gate"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/journal"
	"github.com/muster-run/muster/mock"
)

// writer is a zero-work agent: it writes one small file named after
// its task.
func writer() *mock.Executor {
	return &mock.Executor{ExecuteFn: func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		return &muster.ExecResult{}, os.WriteFile(filepath.Join(req.Dir, string(req.Task.ID)+".txt"), []byte("x\n"), 0o644)
	}}
}

// BenchmarkDispatch measures the time per zero-work task of a run on one
// clone with one trivial plan-wide gate, local and through the fleet (an
// embedded server with credentials and a per-write sync, one worker on
// loopback with one clone, real git on both sides): the difference is
// the fleet's dispatch overhead per task. "fleet" runs the gate again on
// the orchestrator (the default); "fleet_trusted" takes the worker's gate
// result ([fleet] trust_worker_gates, the previous behaviour);
// "fleet_spawn" is "fleet" with a git process for each bundle's commit
// instead of the long-lived helpers (git.Batches, as before them; their
// CPU is counted in the others). Each task's base is a new run branch
// tip, so every remote task moves a bundle out and one back.
//
//	go test ./internal/cli/fleet/ -run '^$' -bench BenchmarkDispatch -benchtime 3x
func BenchmarkDispatch(b *testing.B) {
	const n = 30
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git")
	}
	for _, mode := range []string{"local", "fleet", "fleet_trusted", "fleet_spawn"} {
		remote, trusted := mode != "local", mode == "fleet_trusted"
		b.Run(mode, func(b *testing.B) {
			dir := b.TempDir()
			b.Setenv("HOME", dir)
			b.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
			b.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
			b.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			repo := filepath.Join(dir, "repo")
			for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "init"}} {
				if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
					b.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			ctx := context.Background()
			var cpu atomic.Int64 // git's CPU time, both sides
			if remote {
				srv, err := fleet.Serve(fleet.ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(dir, "js")})
				if err != nil {
					b.Fatal(err)
				}
				defer srv.Close()
				wc, err := fleet.Connect(ctx, srv.URL(), "bench worker", fleet.Auth{Creds: issue(b, srv, dir, "bw", fleet.UserOptions{Executors: []string{"x"}})}, false)
				if err != nil {
					b.Fatal(err)
				}
				defer wc.Close()
				spec := &muster.ExecutorSpec{Name: "x", Kind: "command", Clones: 1}
				var hb, ob *git.Batches // the long-lived helpers: worker's, orchestrator's
				if mode != "fleet_spawn" {
					hb, ob = git.NewBatches(), git.NewBatches()
				}
				helpers := func() int64 {
					_, c1 := hb.Close()
					_, c2 := ob.Close()
					return int64(c1 + c2)
				}
				w, err := fleet.NewWorker(fleet.WorkerOptions{Name: "bw", Conn: wc, Specs: []*muster.ExecutorSpec{spec},
					Executors: map[string]muster.Executor{"x": writer()}, Host: &git.Host{Root: filepath.Join(dir, "host"), Batches: hb}, Scratch: filepath.Join(dir, "wscratch"),
					Gates: gate.Runner{}})
				if err != nil {
					b.Fatal(err)
				}
				wctx, stop := context.WithCancel(git.WithCPUCounter(ctx, &cpu))
				done := make(chan struct{})
				go func() { _ = w.Run(wctx); close(done) }()
				defer func() { stop(); <-done }()
				oc, err := fleet.Connect(ctx, srv.URL(), "bench run", fleet.Auth{Creds: issue(b, srv, dir, "run", fleet.UserOptions{Orchestrator: true})}, true)
				if err != nil {
					b.Fatal(err)
				}
				defer oc.Close()
				benchRuns(b, repo, dir, n, &cpu, helpers, func(runID, base, runDir string) map[string]muster.Executor {
					root, err := git.RootCommit(ctx, repo, base)
					if err != nil {
						b.Fatal(err)
					}
					d, err := fleet.Open(git.WithCPUCounter(ctx, &cpu), oc, fleet.DispatchOptions{Run: runID, Repo: root, Local: git.Bundles{Batches: ob}, Scratch: filepath.Join(runDir, "fleet"), TrustGates: trusted})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(d.Close)
					return map[string]muster.Executor{"x": d.Executor(spec)}
				})
				return
			}
			benchRuns(b, repo, dir, n, &cpu, nil, func(string, string, string) map[string]muster.Executor {
				return map[string]muster.Executor{"x": writer()}
			})
		})
	}
}

// issue writes credentials of srv's fleet into dir.
func issue(b *testing.B, srv *fleet.Server, dir, name string, o fleet.UserOptions) string {
	c, err := srv.Keys().Issue(name, o)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, name+".creds")
	if err := os.WriteFile(p, c, 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchRuns runs b.N runs of n zero-work tasks on one clone and reports
// the time per task; helpers (nil: none) stops the long-lived git
// helpers and returns their CPU time, counted with the git processes'.
func benchRuns(b *testing.B, repo, dir string, n int, cpu *atomic.Int64, helpers func() int64, crew func(runID, base, runDir string) map[string]muster.Executor) {
	p := &muster.Plan{}
	for i := range n {
		p.Tasks = append(p.Tasks, &muster.Task{ID: muster.TaskID(fmt.Sprintf("t%03d", i)), Title: "x", Owns: []string{fmt.Sprintf("t%03d.txt", i)}})
	}
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "x", Kind: "command", Clones: 1}},
		Gates: []muster.GateSpec{{Name: "check", Command: "true"}}}
	ctx := git.WithCPUCounter(context.Background(), cpu)
	b.ResetTimer()
	cpu.Store(0)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		runID := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
		ws, err := git.Open(ctx, git.Options{Repo: repo, RunID: runID})
		if err != nil {
			b.Fatal(err)
		}
		if err := os.MkdirAll(ws.RunDir(), 0o755); err != nil {
			b.Fatal(err)
		}
		j, _, err := journal.Open(filepath.Join(ws.RunDir(), journal.FileName), journal.Options{})
		if err != nil {
			b.Fatal(err)
		}
		execs := crew(runID, ws.Base(), ws.RunDir())
		start := time.Now()
		st, err := driver.Run(ctx, driver.Options{
			RunID: runID, Plan: p, Config: cfg, Base: ws.Base(), Branch: ws.Branch(), Journal: j, Workspace: ws,
			Executors: execs, ScratchDir: filepath.Join(ws.RunDir(), "scratch"), Gates: gate.Runner{},
		})
		total += time.Since(start)
		j.Close()
		ws.Close(ctx)
		if err != nil || st.RunState != muster.RunSucceeded {
			b.Fatalf("run: %v %s", err, st.RunState)
		}
	}
	if helpers != nil {
		cpu.Add(helpers())
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N*n), "ms/task")
	b.ReportMetric(float64(cpu.Load())/1e6/float64(b.N*n), "git-cpu-ms/task")
	b.Logf("load average %s", loadavg())
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}

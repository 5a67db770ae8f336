// Package scale holds the scale benchmarks of issue 24: the real muster
// binary on a real repository with a light shell agent (so that the
// figures are muster's), confinement and network at their defaults.
// Each benchmark is one command (see BENCHMARKS.md); they report ratios
// and per-phase figures as benchmark metrics.
//
//	go test ./tests/scale -run '^$' -bench Linear -benchtime 1x -timeout 30m
//	go test ./tests/scale -run '^$' -bench GatedQueue -benchtime 1x -timeout 30m
//	go test ./tests/scale -run '^$' -bench TaskOverhead -benchtime 1x -timeout 30m
//
// MUSTER_BENCH_PROFILE=DIR writes a CPU profile of each muster process
// there (go tool pprof DIR/<bench>.pprof); MUSTER_BENCH_KEEP=DIR keeps
// each measured run's journal there (DIR/<bench>.jsonl).
package scale

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/journal"
	"github.com/muster-run/muster/report"
)

// bin is the muster binary, built once.
var bin string

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintln(os.Stderr, "scale benchmarks need git")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "muster-scale-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "muster")
	// The build keeps the Go cache it would have had: XDG_CACHE_HOME
	// (muster's clone pool, set apart below) also places Go's cache,
	// and a build from nothing before each benchmark loaded the machine
	// and left thousands of files just deleted where the runs create
	// theirs.
	goCache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go env GOCACHE: %v\n", err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	_, here, _, _ := runtime.Caller(0)
	// Built as a release is (.goreleaser.yaml): static, without cgo, and
	// installed with its sandbox launcher beside it. The figures are
	// those of the binaries users run, stage one of every sandbox
	// included.
	build := exec.Command("go", "build", "-trimpath", "-o", dir+"/", "./cmd/muster", "./cmd/muster-confine")
	build.Dir = filepath.Join(filepath.Dir(here), "..", "..")
	build.Env = append(os.Environ(), "GOCACHE="+strings.TrimSpace(string(goCache)), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build muster: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// agentScript sleeps the task's SLEEP line (seconds) and writes the
// task's own file: all inside its clone. It is as light as a shell agent
// gets, two programs (the shell and sleep): the prompt is read with the
// shell's own read, and out/ is in the repository already. What it costs
// is measured on its own (agentCost) and reported apart from muster's.
const agentScript = `#!/bin/sh
s=0
while IFS= read -r line; do
	case $line in "SLEEP: "*) s=${line#SLEEP: }; break ;; esac
done < "$MUSTER_PROMPT_FILE"
sleep "$s"
echo "$MUSTER_TASK_ID" > "out/$MUSTER_TASK_ID.txt"
echo done
`

// scenario is one run: independent tasks with their sleeps, clones, and
// plan-wide gates.
type scenario struct {
	name   string
	sleeps []float64
	clones int
	gates  map[string]string
	// again: the plan has run once before in the repository (not
	// measured), so muster knows how long each task took.
	again bool
}

// outcome is what a run took.
type outcome struct {
	wall   time.Duration
	cpu    time.Duration // muster and every process it waited for (git, agents, gates)
	events []muster.Event
}

func run(b *testing.B, sc scenario) outcome {
	b.Helper()
	side := b.TempDir()
	repo := filepath.Join(side, "repo")
	for _, args := range [][]string{{"init", "-q", "-b", "main", repo}, {"-C", repo, "config", "user.name", "Bench"},
		{"-C", repo, "config", "user.email", "bench@example.com"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for name, data := range map[string]string{"README.md": "bench\n", "out/.keep": ""} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"-C", repo, "add", "-A"}, {"-C", repo, "commit", "-q", "-m", "initial"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	agent := filepath.Join(side, "agent.sh")
	if err := os.WriteFile(agent, []byte(agentScript), 0o755); err != nil {
		b.Fatal(err)
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "[executors.sh]\nkind = \"command\"\nclones = %d\ncommand = [%q]\n", sc.clones, agent)
	if len(sc.gates) > 0 {
		cfg.WriteString("\n[gates]\n")
		for n, c := range sc.gates {
			fmt.Fprintf(&cfg, "%s = %q\n", n, c)
		}
	}
	cfgPath := filepath.Join(side, "muster.toml")
	var plan strings.Builder
	plan.WriteString("# Plan: scale\n\nEach task writes its own file.\n\n")
	for i, s := range sc.sleeps {
		fmt.Fprintf(&plan, "## [ ] t%03d: Task %d\nOwns: out/t%03d.txt\n\nSLEEP: %g\n\n", i, i, i, s)
	}
	planPath := filepath.Join(side, "plan.md")
	for p, c := range map[string]string{cfgPath: cfg.String(), planPath: plan.String()} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if sc.again {
		warm := exec.Command(bin, "run", planPath, "--config", cfgPath, "--run-id", "before", "--plain")
		warm.Dir, warm.Env = repo, append(os.Environ(), "NO_COLOR=1")
		if out, err := warm.CombinedOutput(); err != nil {
			b.Fatalf("muster run (the run before): %v\n%s", err, out)
		}
	}
	cmd := exec.Command(bin, "run", planPath, "--config", cfgPath, "--run-id", "scale", "--plain")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	if d := os.Getenv("MUSTER_BENCH_PROFILE"); d != "" {
		cmd.Env = append(cmd.Env, "MUSTER_CPUPROFILE="+filepath.Join(d, sc.name+".pprof"))
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	if err != nil {
		b.Fatalf("muster run: %v\n%s", err, out.String())
	}
	data, err := os.ReadFile(filepath.Join(repo, ".git", "muster", "runs", "scale", journal.FileName))
	if err != nil {
		b.Fatal(err)
	}
	if d := os.Getenv("MUSTER_BENCH_KEEP"); d != "" {
		_ = os.WriteFile(filepath.Join(d, sc.name+".jsonl"), data, 0o644)
	}
	events, _, err := journal.Read(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()) - time.Duration(before.Utime.Nano()+before.Stime.Nano())
	return outcome{wall: wall, cpu: cpu, events: events}
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

// quantile returns the q-quantile (0..1) of xs, nearest rank.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// BenchmarkLinear: 64 independent tasks of 1-3 s on 16 clones with a
// light agent. x_linear is the ideal (Σ agent time / 16) over the
// makespan: the target is at least 0.9. x_order is the same for the
// makespan muster's order would have with no overhead at all (the
// tasks started in the order the run's journal has them start, each on
// the first free clone), over the makespan: what muster's own costs
// leave of it. first: a first run, in plan order (1, 2, 3 s, ...: no
// order that knows nothing of the durations can beat 10 s, x_linear
// 0.79); again: the plan ran once before, and muster starts the longest
// tasks first.
func BenchmarkLinear(b *testing.B) {
	sleeps := make([]float64, 64)
	for i := range sleeps {
		sleeps[i] = float64(1 + i%3)
	}
	for _, again := range []bool{false, true} {
		b.Run(map[bool]string{false: "first", true: "again"}[again], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				o := run(b, scenario{name: "linear", sleeps: sleeps, clones: 16, again: again})
				ideal := sum(sleeps) / 16
				b.ReportMetric(o.wall.Seconds(), "s_makespan")
				b.ReportMetric(ideal/o.wall.Seconds(), "x_linear")
				b.ReportMetric(orderSpan(o.events, sleeps, 16)/o.wall.Seconds(), "x_order")
			}
		})
	}
}

// orderSpan is the makespan, in seconds, of the tasks started in the
// order the journal has them start, each on the first free of clones,
// with no overhead: the best muster's order allows.
func orderSpan(events []muster.Event, sleeps []float64, clones int) float64 {
	free := make([]float64, clones)
	for _, e := range events {
		if e.Type != muster.EvTaskStarted {
			continue
		}
		var i int
		if _, err := fmt.Sscanf(string(e.Task), "t%03d", &i); err != nil || i >= len(sleeps) {
			continue
		}
		k := 0
		for j := range free {
			if free[j] < free[k] {
				k = j
			}
		}
		free[k] += sleeps[i]
	}
	return slices.Max(free)
}

// BenchmarkGatedQueue: 48 independent 1 s tasks on 8 clones with a 1 s
// plan-wide gate. x_bound is the makespan over the work bound, Σ(agent
// time + in-attempt gate time) / clones + one gate run (target at most
// 1.35); p95 integration wait in seconds (target at most one gate run).
func BenchmarkGatedQueue(b *testing.B) {
	sleeps := make([]float64, 48)
	for i := range sleeps {
		sleeps[i] = 1
	}
	for i := 0; i < b.N; i++ {
		o := run(b, scenario{name: "gated", sleeps: sleeps, clones: 8, gates: map[string]string{"slow": "sleep 1"}})
		bound := (sum(sleeps)+float64(len(sleeps))*1)/8 + 1
		rep := report.Build([][]muster.Event{o.events}, report.Options{})
		batches := 0
		for _, e := range o.events {
			if e.Type == muster.EvIntegrating {
				batches++
			}
		}
		b.ReportMetric(o.wall.Seconds(), "s_makespan")
		b.ReportMetric(o.wall.Seconds()/bound, "x_bound")
		b.ReportMetric(rep.IntegrationWaitP50, "s_wait_p50")
		b.ReportMetric(rep.IntegrationWaitP95, "s_wait_p95")
		// One gate run as muster runs it (check out, sandbox, the 1 s
		// gate): the p95 wait against it as well as against the gate's 1 s.
		g := gateRuns(o.events)
		b.ReportMetric(g, "s_gate_run")
		b.ReportMetric(rep.IntegrationWaitP95/g, "x_wait_p95_gate_run")
		b.ReportMetric(float64(len(sleeps))/float64(batches), "tasks/move")
	}
}

// gateRuns is the median time of the queue's gate runs: from the
// "verifying" phase of a batch's top commit to its gate's result.
func gateRuns(events []muster.Event) float64 {
	started := map[muster.TaskID]time.Time{}
	var runs []float64
	for _, e := range events {
		switch {
		case e.Type == muster.EvPhase && e.Phase == "verifying":
			started[e.Task] = e.Time
		case e.Type == muster.EvGateRan && e.Phase == "integration":
			if t, ok := started[e.Task]; ok {
				runs = append(runs, e.Time.Sub(t).Seconds())
				delete(started, e.Task)
			}
		}
	}
	return quantile(runs, 0.5)
}

// BenchmarkTaskOverhead: muster's cost per task, wall (makespan minus
// agent time, per task) and CPU (muster, git, the sandbox's stage one,
// the shell agent and everything else muster waited for, per task). On
// one clone it also runs the agent on its own (agentCost) and reports
// its share apart: ms_wall_muster/task and ms_cpu_muster/task are the
// figures without it (targets under 40 and 20 ms). With the median of each phase of a
// task: start_to_agent (lease, clone reset, confinement start, guard
// snapshot), agent_to_commit (the agent's exit, change, checks, commit;
// the agent's sleep taken out), commit_to_integrated (queue and move),
// integrated_to_done, done_to_next (the scheduler's turn on that clone).
func BenchmarkTaskOverhead(b *testing.B) {
	for _, c := range []struct{ clones, tasks int }{{1, 32}, {16, 64}} {
		b.Run(fmt.Sprintf("clones=%d", c.clones), func(b *testing.B) {
			sleeps := make([]float64, c.tasks)
			for i := range sleeps {
				sleeps[i] = 0.5
			}
			for i := 0; i < b.N; i++ {
				o := run(b, scenario{name: fmt.Sprintf("overhead-%d", c.clones), sleeps: sleeps, clones: c.clones})
				n := float64(c.tasks)
				wall := (o.wall.Seconds() - sum(sleeps)/float64(c.clones)) * 1000 / n * float64(c.clones)
				cpu := o.cpu.Seconds() * 1000 / n
				b.ReportMetric(wall, "ms_wall/task")
				b.ReportMetric(cpu, "ms_cpu/task")
				if c.clones == 1 {
					// The agent's own share, measured on its own: what
					// is left is muster's (with git and the sandbox).
					a := agentCost(b, c.tasks)
					b.ReportMetric(a.wall.Seconds()*1000, "ms_wall_agent/task")
					b.ReportMetric(a.cpu.Seconds()*1000, "ms_cpu_agent/task")
					b.ReportMetric(wall-a.wall.Seconds()*1000, "ms_wall_muster/task")
					b.ReportMetric(cpu-a.cpu.Seconds()*1000, "ms_cpu_muster/task")
				}
				for name, v := range phases(o.events, 0.5) {
					b.ReportMetric(v, "ms_"+name)
				}
			}
		})
	}
}

// agentCost runs the benchmark's agent n times on its own, outside
// muster and its sandbox, with a prompt that sleeps 0 s, and returns
// its median wall time and its mean CPU time (the shell and sleep) per
// run: the part of a task's figures that is the agent's, not muster's.
func agentCost(b *testing.B, n int) outcome {
	b.Helper()
	dir := b.TempDir()
	agent, prompt := filepath.Join(dir, "agent.sh"), filepath.Join(dir, "prompt.md")
	if err := os.WriteFile(agent, []byte(agentScript), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(prompt, []byte("# Task\n\nSLEEP: 0\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		b.Fatal(err)
	}
	walls := make([]float64, 0, n)
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	for i := 0; i < n; i++ {
		cmd := exec.Command(agent)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "MUSTER_PROMPT_FILE="+prompt, fmt.Sprintf("MUSTER_TASK_ID=t%03d", i))
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("agent on its own: %v\n%s", err, out)
		}
		walls = append(walls, time.Since(start).Seconds())
	}
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()) - time.Duration(before.Utime.Nano()+before.Stime.Nano())
	return outcome{wall: time.Duration(quantile(walls, 0.5) * float64(time.Second)), cpu: cpu / time.Duration(n)}
}

// phases returns the median milliseconds of each phase of a task, from
// the journal's times; agent is the agent's own time (seconds), taken out.
func phases(events []muster.Event, agent float64) map[string]float64 {
	type marks struct{ started, agentAt, committed, integrated, done time.Time }
	m := map[muster.TaskID]*marks{}
	get := func(id muster.TaskID) *marks {
		if m[id] == nil {
			m[id] = &marks{}
		}
		return m[id]
	}
	lastDone := map[string]time.Time{} // by slot
	var next []float64
	for _, e := range events {
		switch e.Type {
		case muster.EvTaskStarted:
			get(e.Task).started = e.Time
			slot := muster.Slot(e.Executor, e.Clone)
			if t, ok := lastDone[slot]; ok {
				next = append(next, e.Time.Sub(t).Seconds()*1000)
			}
		case muster.EvAgentStarted:
			if e.Role != muster.RoleReviewer {
				get(e.Task).agentAt = e.Time
			}
		case muster.EvCommitted:
			get(e.Task).committed = e.Time
		case muster.EvIntegrated:
			get(e.Task).integrated = e.Time
		case muster.EvExecutorRelease:
			lastDone[muster.Slot(e.Executor, e.Clone)] = e.Time
		case muster.EvTaskSucceeded:
			get(e.Task).done = e.Time
		}
	}
	var a, c, i, d []float64
	for _, k := range m {
		if k.started.IsZero() || k.agentAt.IsZero() || k.committed.IsZero() || k.integrated.IsZero() || k.done.IsZero() {
			continue
		}
		a = append(a, k.agentAt.Sub(k.started).Seconds()*1000)
		c = append(c, (k.committed.Sub(k.agentAt).Seconds()-agent)*1000)
		i = append(i, k.integrated.Sub(k.committed).Seconds()*1000)
		d = append(d, k.done.Sub(k.integrated).Seconds()*1000)
	}
	return map[string]float64{"start_to_agent": quantile(a, 0.5), "agent_to_commit": quantile(c, 0.5),
		"commit_to_integrated": quantile(i, 0.5), "integrated_to_done": quantile(d, 0.5), "done_to_next": quantile(next, 0.5)}
}

package fleet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster/fleet"
	"github.com/muster-run/muster/internal/cli"
)

// The test binary is muster too: with MUSTER_E2E_MAIN=1 it runs the
// real entry point, so workers and orchestrators are real processes.
func TestMain(m *testing.M) {
	if os.Getenv("MUSTER_E2E_MAIN") == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

// env is one test's world: a temp home, a repository, an embedded
// server on a free loopback port, and the processes it started.
type env struct {
	t    *testing.T
	dir  string
	repo string
	url  string
	srv  *fleet.Server
	// keys sign the credentials the test issues (srv's by default).
	keys *fleet.Keys
	vars []string
	// procs are killed at the end (whatever state they are in).
	procs []*exec.Cmd
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	e := &env{t: t, dir: dir, repo: filepath.Join(dir, "repo")}
	gitconfig := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.vars = []string{"MUSTER_E2E_MAIN=1", "HOME=" + dir, "XDG_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"XDG_DATA_HOME=" + filepath.Join(dir, "data"), "GIT_CONFIG_GLOBAL=" + gitconfig, "GIT_CONFIG_NOSYSTEM=1",
		"NO_COLOR=1", "CI=true", "MUSTER_MARKS=" + filepath.Join(dir, "marks")}
	if err := os.MkdirAll(filepath.Join(dir, "marks"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := fleet.Serve(fleet.ServeOptions{Listen: "127.0.0.1:0", Store: filepath.Join(dir, "js")})
	if err != nil {
		t.Fatal(err)
	}
	e.srv, e.url, e.keys = srv, srv.URL(), srv.Keys()
	// The orchestrator's credentials for every muster the test starts
	// (a worker's --creds wins over them).
	e.vars = append(e.vars, "MUSTER_NATS_CREDS="+e.creds("orchestrator", fleet.UserOptions{Orchestrator: true}))
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("--- %s\n%s", filepath.Base(l), b)
			}
		}
		for _, p := range e.procs {
			if p.Process != nil {
				_ = syscall.Kill(-p.Process.Pid, syscall.SIGCONT)
				_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
				_ = p.Wait()
			}
		}
		e.killAgents()
		srv.Close()
	})
	return e
}

// killAgents stops the agents the scripts left sleeping (their pids are
// in the marks directory).
func (e *env) killAgents() {
	files, _ := filepath.Glob(filepath.Join(e.dir, "marks", "*.pid"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var pid int
		if _, err := fmtSscan(strings.TrimSpace(string(b)), &pid); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func (e *env) command(dir string, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Dir = dir
	c.Env = append(os.Environ(), e.vars...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c
}

// run runs muster to its end (bounded) and returns its exit status and output.
func (e *env) run(dir string, timeout time.Duration, args ...string) (int, string, string) {
	e.t.Helper()
	c := e.command(dir, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(timeout):
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
		e.t.Fatalf("muster %s: still running after %s\nstderr:\n%s", strings.Join(args, " "), timeout, errb.String())
	}
	return c.ProcessState.ExitCode(), out.String(), errb.String()
}

// start starts muster in the background, its stderr in a file.
func (e *env) start(dir, logName string, args ...string) *exec.Cmd {
	e.t.Helper()
	c := e.command(dir, args...)
	f, err := os.Create(filepath.Join(e.dir, logName))
	if err != nil {
		e.t.Fatal(err)
	}
	c.Stdout, c.Stderr = f, f
	if err := c.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.procs = append(e.procs, c)
	return c
}

func (e *env) log(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.dir, name))
	return string(b)
}

// creds issues credentials of the test's fleet and returns their file.
func (e *env) creds(name string, o fleet.UserOptions) string {
	e.t.Helper()
	b, err := e.keys.Issue(name, o)
	if err != nil {
		e.t.Fatal(err)
	}
	p := filepath.Join(e.dir, name+".creds")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

var executorTable = regexp.MustCompile(`(?m)^\[executors\.([^\]]+)\]`)

// worker starts `muster worker` with config toml, and credentials that
// name its executors, and waits until it is registered.
func (e *env) worker(name, toml string) *exec.Cmd {
	e.t.Helper()
	toml = e.marksWritable(toml)
	cfg := filepath.Join(e.dir, name+".toml")
	if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
		e.t.Fatal(err)
	}
	var execs []string
	for _, m := range executorTable.FindAllStringSubmatch(toml, -1) {
		execs = append(execs, m[1])
	}
	creds := e.creds(name, fleet.UserOptions{Executors: execs})
	return e.workerAt(name, e.url, creds, cfg)
}

// marksWritable runs a worker's agents unconfined unless its config
// says otherwise ([run]): the protocol tests' agents talk through the
// marks directory and leave their host pids there for the test to stop
// them (a confined agent's pid is its namespace's). TestWorkerConfines-
// Agents tests the confinement.
func (e *env) marksWritable(toml string) string {
	if strings.Contains(toml, "[run]") {
		return toml
	}
	return toml + "\n[run]\nconfine = \"off\"\n"
}

// workerAt starts a worker that dials url with creds and config cfg,
// and waits until it is registered.
func (e *env) workerAt(name, url, creds, cfg string) *exec.Cmd {
	e.t.Helper()
	c := e.start(e.dir, name+".log", "worker", "--nats", url, "--creds", creds, "--config", cfg, "--dir", filepath.Join(e.dir, "w-"+name))
	e.waitFor(20*time.Second, func() bool { return e.registered(name) }, "worker "+name+" registers\n"+e.log(name+".log"))
	return c
}

func (e *env) registered(name string) bool {
	for _, w := range e.status().Workers {
		if w.Name == name {
			return true
		}
	}
	return false
}

type statusJSON struct {
	Workers []struct {
		Name      string  `json:"name"`
		Version   string  `json:"version"`
		Age       float64 `json:"heartbeat_age_s"`
		Executors []struct {
			Name   string `json:"name"`
			Kind   string `json:"kind"`
			Clones int    `json:"clones"`
			Busy   int    `json:"busy"`
		} `json:"executors"`
	} `json:"workers"`
}

func (e *env) status() statusJSON {
	e.t.Helper()
	code, out, errs := e.run(e.dir, 30*time.Second, "fleet", "status", "--nats", e.url, "--json")
	if code != 0 {
		e.t.Fatalf("fleet status: exit %d: %s", code, errs)
	}
	var s statusJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		e.t.Fatalf("fleet status --json: %v\n%s", err, out)
	}
	return s
}

func (e *env) waitFor(d time.Duration, ok func() bool, what string) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// git runs git in the repository.
func (e *env) git(args ...string) string {
	e.t.Helper()
	c := exec.Command("git", args...)
	c.Dir = e.repo
	c.Env = append(os.Environ(), e.vars...)
	out, err := c.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// initRepo makes the repository with files.
func (e *env) initRepo(files map[string]string) {
	e.t.Helper()
	if err := os.MkdirAll(e.repo, 0o755); err != nil {
		e.t.Fatal(err)
	}
	e.git("init", "-q")
	for name, body := range files {
		p := filepath.Join(e.repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			e.t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			e.t.Fatal(err)
		}
	}
	e.git("add", "-A")
	e.git("commit", "-q", "-m", "init")
}

func (e *env) write(name, body string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

type runStatus struct {
	Run   string `json:"run"`
	State string `json:"state"`
	Tasks []struct {
		ID       string  `json:"id"`
		State    string  `json:"state"`
		Attempts int     `json:"attempts"`
		Commit   *string `json:"commit"`
		Reason   *string `json:"reason"`
		Worker   *string `json:"worker"`
		Executor *string `json:"executor"`
	} `json:"tasks"`
}

func (e *env) runStatus() runStatus {
	e.t.Helper()
	code, out, errs := e.run(e.repo, 30*time.Second, "status", "--json")
	if code != 0 {
		e.t.Fatalf("status: exit %d: %s", code, errs)
	}
	var s runStatus
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		e.t.Fatalf("status --json: %v\n%s", err, out)
	}
	return s
}

// journal returns the run's events, decoded loosely.
func (e *env) journal(run string) []map[string]any {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.repo, ".git", "muster", "runs", run, "journal.jsonl"))
	if err != nil {
		e.t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			e.t.Fatalf("journal line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

var _ = context.Background

package fleet_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster/confine"
)

// TestWorkerSetupOutputsReadOnly: a worker sets up its clones as a local
// run does ([setup], sent with the job) and its coder sees the setup's
// outputs read-only. The attack: with the worker's gates trusted
// ([fleet] trust_worker_gates), the agent makes the honest test fail and
// rewrites node_modules' test runner to always pass (or, before setup
// ran on workers, installs one of its own). The gate runs the runner
// setup installed, the task fails, and its change never lands.
func TestWorkerSetupOutputsReadOnly(t *testing.T) {
	st := confine.Probe()
	if !st.Available() {
		t.Skipf("this system cannot confine agents: %s", st.Reason)
	}
	e := newEnv(t)
	agent := `#!/bin/sh
r="bad"
mkdir -p node_modules/.bin 2>/dev/null
if printf '#!/bin/sh\nexit 0\n' > node_modules/.bin/test 2>/dev/null; then r="$r runner:written"; else r="$r runner:denied"; fi
chmod +x node_modules/.bin/test 2>/dev/null
echo "$r" > x.txt
`
	install := "#!/bin/sh\nmkdir -p node_modules/.bin && printf '#!/bin/sh\\ngrep -qx ok x.txt || { cat x.txt; exit 1; }\\n' > node_modules/.bin/test && chmod +x node_modules/.bin/test\n"
	toml := "[setup.deps]\ncommand = \"./install.sh\"\noutputs = [\"node_modules/\"]\n\n[gates]\ntest = \"node_modules/.bin/test\"\n\n[fleet]\ntrust_worker_gates = true\n"
	e.initRepo(map[string]string{"agent.sh": agent, "install.sh": install, ".gitignore": "node_modules/\n", "x.txt": "ok\n", "muster.toml": toml})
	plan := e.write("plan.md", "# Plan: setup\n\n## [ ] x: Break the test\nOwns: x.txt\n")
	e.worker("w1", fmt.Sprintf(workerToml, 1)+"\n[run]\nconfine = \"auto\"\n")
	code, _, errs := e.run(e.repo, 120*time.Second, "run", plan, "--nats", e.url, "--plain", "--run-id", "setupro")
	if code == 0 {
		t.Fatalf("run: exit 0: the agent's change landed past its failing gate\n%s\nworker:\n%s", errs, e.log("w1.log"))
	}
	if out, err := os.ReadFile(filepath.Join(e.repo, "x.txt")); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("x.txt in the repository: %q, %v", out, err)
	}
	// The worker's clone: setup's runner is the honest one, and the
	// agent's attempt to replace it was refused.
	matches, _ := filepath.Glob(filepath.Join(e.dir, "w-w1", "*", "*", "node_modules", ".bin", "test"))
	matches2, _ := filepath.Glob(filepath.Join(e.dir, "w-w1", "*", "*", "*", "node_modules", ".bin", "test"))
	matches = append(matches, matches2...)
	if len(matches) == 0 {
		t.Fatalf("no node_modules/.bin/test in the worker's clones: setup did not run there\n%s", e.log("w1.log"))
	}
	for _, m := range matches {
		if b, _ := os.ReadFile(m); !strings.Contains(string(b), "grep -qx ok") {
			t.Errorf("%s: %q: the agent rewrote the test runner", m, b)
		}
	}
	// Where namespaces exist the write itself is refused; elsewhere
	// setup, run again before the gates, puts the runner back.
	if !strings.Contains(errs, "runner:denied") && !strings.Contains(errs, "runner:written") {
		t.Errorf("the gate's output does not show the agent's report\n%s", errs)
	}
	t.Logf("run:\n%s", errs)
}

// TestWorkerGatesOwnBuildCache: a worker's gates build with a Go build
// cache of their own, inside the worker's directory, which its agents
// cannot write (a local run's gates have theirs, git.GatesCache): an
// agent that may write the Go build cache ([run] writable, as muster
// init writes for a Go project) cannot poison what the gates build with.
func TestWorkerGatesOwnBuildCache(t *testing.T) {
	st := confine.Probe()
	if !st.Available() {
		t.Skipf("this system cannot confine agents: %s", st.Reason)
	}
	e := newEnv(t)
	cache := filepath.Join(e.dir, "w-w1", "gates", "go-build")
	agent := fmt.Sprintf("#!/bin/sh\nmkdir -p %[1]q 2>/dev/null; if echo poison > %[1]q/poison 2>/dev/null; then echo written > x.txt; else echo denied > x.txt; fi\n", cache)
	toml := "[gates]\ncache = 'test ! -f x.txt || { echo \"GOCACHE=$GOCACHE\"; exit 1; }'\n\n[fleet]\ntrust_worker_gates = true\n"
	e.initRepo(map[string]string{"agent.sh": agent, "muster.toml": toml})
	plan := e.write("plan.md", "# Plan: cache\n\n## [ ] x: Poison\nOwns: x.txt\n")
	e.worker("w1", fmt.Sprintf(workerToml, 1)+"\n[run]\nconfine = \"auto\"\n")
	_, _, errs := e.run(e.repo, 120*time.Second, "run", plan, "--nats", e.url, "--plain", "--run-id", "cache")
	if !strings.Contains(errs, "GOCACHE="+cache) {
		t.Errorf("the worker's gate does not build with the worker's own cache %s\n%s", cache, errs)
	}
	if b, err := os.ReadFile(filepath.Join(cache, "poison")); err == nil {
		t.Errorf("the agent wrote the gates' build cache: %q", b)
	}
}

// TestWorkerGatesNetwork: a worker's gates get the network policy a
// local run's get ([gates] network, default none), not the host's
// network: a gate on a worker cannot reach a port on the worker host's
// loopback (where the fleet's server may listen).
func TestWorkerGatesNetwork(t *testing.T) {
	st := confine.Probe()
	if !st.Available() {
		t.Skipf("this system cannot confine agents: %s", st.Reason)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	e := newEnv(t)
	gate := fmt.Sprintf(`test ! -f x.txt || { if bash -c "exec 3<>/dev/tcp/127.0.0.1/%d" 2>/dev/null; then echo net:reached; else echo net:refused; fi; exit 1; }`, port)
	toml := "[gates]\nnet = '" + gate + "'\n\n[fleet]\ntrust_worker_gates = true\n"
	e.initRepo(map[string]string{"agent.sh": "#!/bin/sh\necho x > x.txt\n", "muster.toml": toml})
	plan := e.write("plan.md", "# Plan: net\n\n## [ ] x: Reach out\nOwns: x.txt\n")
	e.worker("w1", fmt.Sprintf(workerToml, 1)+"\n[run]\nconfine = \"auto\"\n")
	_, _, errs := e.run(e.repo, 120*time.Second, "run", plan, "--nats", e.url, "--plain", "--run-id", "net")
	if strings.Contains(errs, "net:reached") || !strings.Contains(errs, "net:refused") {
		t.Errorf("the worker's gate reached the host's loopback, or did not run\n%s", errs)
	}
}

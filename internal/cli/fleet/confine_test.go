package fleet_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster/confine"
)

// TestWorkerConfinesAgents: a worker's agent is confined as a local
// run's is. It tries to plant a hook in the orchestrator's repository on
// the same host, to write into the worker's own directory (its other
// clones, its object stores), and to read the worker's credentials;
// each is prevented, and what it may write (its clone) comes back as
// the task's change.
func TestWorkerConfinesAgents(t *testing.T) {
	st := confine.Probe()
	if !st.Available() {
		t.Skipf("this system cannot confine agents: %s", st.Reason)
	}
	e := newEnv(t)
	wdir := filepath.Join(e.dir, "w-w1")
	creds := filepath.Join(e.dir, "w1.creds")
	hook := filepath.Join(e.repo, ".git", "hooks", "pre-commit")
	script := fmt.Sprintf(`#!/bin/sh
r=""
if echo planted > %[1]q 2>/dev/null; then r="$r hook:written"; else r="$r hook:denied"; fi
if echo planted > %[2]q/planted 2>/dev/null; then r="$r dir:written"; else r="$r dir:denied"; fi
if grep -q SEED %[3]q 2>/dev/null; then r="$r creds:read"; else r="$r creds:hidden"; fi
echo "$r" > x.txt
`, hook, wdir, creds)
	e.initRepo(map[string]string{"agent.sh": script})
	plan := e.write("plan.md", "# Plan: confined\n\n## [ ] x: Try the walls\nOwns: x.txt\n")
	e.worker("w1", fmt.Sprintf(workerToml, 1)+"\n[run]\nconfine = \"auto\"\n")
	code, _, errs := e.run(e.repo, 90*time.Second, "run", plan, "--nats", e.url, "--plain", "--run-id", "confined")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	// A worker's directory under /tmp (where the tests' temporary
	// directories are, in CI) is in no invocation's private /tmp: there the
	// agent's write lands in its own tmpfs, and the host check below is
	// what shows the worker's directory untouched.
	got := e.git("show", "muster/confined:x.txt")
	if got != "hook:denied dir:denied creds:hidden" && got != "hook:denied dir:written creds:hidden" {
		t.Errorf("the agent reports %q", got)
	}
	if _, err := os.Stat(hook); err == nil {
		t.Error("the agent planted a hook in the orchestrator's repository")
	}
	if _, err := os.Stat(filepath.Join(wdir, "planted")); err == nil {
		t.Error("the agent wrote into the worker's directory")
	}
	if b, _ := os.ReadFile(creds); !strings.Contains(string(b), "SEED") {
		t.Fatalf("the test's credentials file holds no seed: %q", b)
	}
}

// TestValidateKnowsFleet: a plan that names an executor only the fleet
// serves validates with --nats and --creds, and not without.
func TestValidateKnowsFleet(t *testing.T) {
	e := newEnv(t)
	e.initRepo(map[string]string{"agent.sh": "#!/bin/sh\n"})
	plan := e.write("plan.md", "# Plan: v\n\n## [ ] x: On the fleet\nExecutor: sh\nOwns: x.txt\n")
	e.worker("w1", fmt.Sprintf(workerToml, 1))
	if code, _, errs := e.run(e.repo, 30*time.Second, "validate", plan); code != 2 || !strings.Contains(errs, "executor") {
		t.Errorf("validate without the fleet: exit %d\n%s", code, errs)
	}
	if code, _, errs := e.run(e.repo, 30*time.Second, "validate", plan, "--nats", e.url, "--creds", filepath.Join(e.dir, "orchestrator.creds")); code != 0 {
		t.Errorf("validate --nats --creds: exit %d\n%s", code, errs)
	}
}

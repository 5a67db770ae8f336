package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/cli"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/mockllm"
	"github.com/muster-run/muster/mockllm/mockllmtest"
)

// netAgent is a command executor's program: it calls its model through
// muster's endpoint with the placeholder it holds, reaches a host service
// and an allowlisted one through the proxy, runs a server of its own on
// loopback and reaches it directly, and writes what it saw into out/.
const netAgent = `set -u
mkdir -p out
printf '%s' "$MUSTER_E2E_EGRESS_KEY" > out/key.txt
env > out/env.txt
curl -sS -o out/model.json -w '%{http_code}' -H "Authorization: Bearer $MUSTER_E2E_EGRESS_KEY" -H 'Content-Type: application/json' \
  -d '{"model":"m1","input":"hi"}' "$MUSTER_MODEL_BASE_URL/responses" > out/model.code
curl -sS --noproxy '' -o out/host.body -w '%{http_code}' "http://127.0.0.1:$HOST_PORT/" > out/host.code || true
curl -sS --max-time 5 -o out/direct.body -w '%{http_code}' "http://127.0.0.1:$HOST_PORT/" > out/direct.code || true
curl -sS --noproxy '' -o out/allowed.body -w '%{http_code}' "http://127.0.0.1:$ALLOWED_PORT/" > out/allowed.code || true
"$PYTHON" -m http.server --bind 127.0.0.1 "$OWN_PORT" >out/py.log 2>&1 &
srv=$!
for i in $(seq 1 20); do curl -s -o /dev/null "http://127.0.0.1:$OWN_PORT/" && break; sleep 0.3; done
curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$OWN_PORT/" > out/own.code || true
kill $srv
echo '{"type":"usage","model":"m1","input_tokens":3,"output_tokens":1}'
`

// testRepo is a new git repository, with a git identity for muster's
// commits.
func testRepo(t *testing.T) string {
	t.Helper()
	gitconfig := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	return repo
}

// freePort returns a port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func portOf(t *testing.T, u string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNetworkPolicyEndToEnd: muster run with a command executor behind
// muster's endpoint and proxy. The provider gets the real key while the
// program holds the placeholder; a service on the host's loopback is
// refused through the proxy and recorded as Blocked (shown by status and
// report); an allowlisted literal address is reached; the program's own
// loopback server works; the provider's usage is recorded beside the
// program's claim.
func TestNetworkPolicyEndToEnd(t *testing.T) {
	for _, tool := range []string{"curl", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	// A python outside the home (the sandbox may hide the home, and a
	// pyenv shim with it).
	python := ""
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			python = p
			break
		}
	}
	if python == "" {
		t.Skip("no python3 outside the home")
	}
	t.Setenv("PYTHON", python)
	const key = "sk-e2e-egress-real-7777"
	srv := mockllmtest.Start(t, &mockllm.Script{Scenarios: []mockllm.Scenario{{Name: "default", Steps: []mockllm.Step{
		{Text: "hello", Usage: &mockllm.Usage{InputTokens: 40, OutputTokens: 2}}}}}})
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "host secret service") }))
	defer host.Close()
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "allowed") }))
	defer allowed.Close()
	t.Setenv("MUSTER_E2E_EGRESS_KEY", key)
	t.Setenv("HOST_PORT", portOf(t, host.URL))
	t.Setenv("ALLOWED_PORT", portOf(t, allowed.URL))
	t.Setenv("OWN_PORT", fmt.Sprint(freePort(t)))
	repo := testRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "agent.sh"), []byte(netAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf(`[run]
network = "allowlist"
allow_hosts = ["127.0.0.1:%s"]
env_allow = ["HOST_PORT", "ALLOWED_PORT", "OWN_PORT", "PYTHON"]

[executors.net]
kind = "command"
command = ["sh", "agent.sh"]
base_url = %q
api_key_env = "MUSTER_E2E_EGRESS_KEY"
`, portOf(t, allowed.URL), srv.URL+"/v1")
	plan := "# Plan: net\n\n## [ ] a: Network\nExecutor: net\nReview: none\n\nReach things.\n"
	out, errOut := runPlan(t, repo, toml, plan, "net1")

	show := func(p string) string { return git(t, repo, "show", "muster/net1:"+p) }
	if got := show("out/key.txt"); got != muster.PlaceholderKey {
		t.Errorf("the program held %q, want the placeholder", got)
	}
	if env := show("out/env.txt"); strings.Contains(env, key) || !strings.Contains(env, "MUSTER_MODEL_BASE_URL=http://127.0.0.1:") {
		t.Errorf("the program's environment holds the key or no endpoint:\n%s", env)
	}
	if code := show("out/model.code"); code != "200" || !strings.Contains(show("out/model.json"), "hello") {
		t.Errorf("model request through the endpoint: %s %s", code, show("out/model.json"))
	}
	reached := false
	for _, r := range srv.Requests() {
		if r.API == "responses" {
			reached = true
			if r.KeyDigest != mockllm.KeyDigest(key) {
				t.Errorf("the provider got key digest %q, want the real key's", r.KeyDigest)
			}
		}
	}
	if !reached {
		t.Error("no model request reached the provider")
	}
	if code, body := show("out/host.code"), show("out/host.body"); code == "200" || strings.Contains(body, "host secret") {
		t.Errorf("the host's loopback service was reached through the proxy: %s %q", code, body)
	}
	// In the network namespace of the confinement step, the host's
	// loopback is not there at all.
	exe, _ := os.Executable()
	if confine.ProbeNamespaces(exe) == "" {
		if code := show("out/direct.code"); code == "200" {
			t.Errorf("the host's loopback service was reached directly from the sandbox's network namespace")
		}
	} else {
		t.Logf("no network namespace here (%s): the host's loopback is reachable directly", confine.ProbeNamespaces(exe))
	}
	if code, body := show("out/allowed.code"), show("out/allowed.body"); code != "200" || body != "allowed" {
		t.Errorf("the allowlisted address: %s %q", code, body)
	}
	if code := show("out/own.code"); code != "200" {
		t.Errorf("the program's own loopback server: %s\n%s", code, show("out/py.log"))
	}

	var blocked []muster.Event
	var provider, claim bool
	for _, line := range strings.Split(out.String(), "\n") {
		var e muster.Event
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch {
		case e.Type == muster.EvBlocked:
			blocked = append(blocked, e)
		case e.Type == muster.EvTokensUsed && e.Source == muster.UsageProvider && e.InputTokens == 40:
			provider = true
		case e.Type == muster.EvTokensUsed && e.Source == muster.UsageClaim && e.InputTokens == 3:
			claim = true
		}
	}
	if len(blocked) != 1 || blocked[0].BlockedHost() != "127.0.0.1:"+portOf(t, host.URL) || blocked[0].Task != "a" {
		t.Fatalf("Blocked events %+v, want the host service's\nstderr:\n%s", blocked, errOut.String())
	}
	if !provider || !claim {
		t.Errorf("provider usage recorded %v, the program's claim beside it %v", provider, claim)
	}
	for _, args := range [][]string{{"status", "net1"}, {"report", "net1"}} {
		var o, e bytes.Buffer
		if code := cli.Execute(context.Background(), &cmdutil.IOStreams{In: strings.NewReader(""), Out: &o, ErrOut: &e}, append(args, "--repo", repo)); code != 0 {
			t.Fatalf("muster %v: exit %d\n%s", args, code, e.String())
		}
		if !strings.Contains(o.String(), blocked[0].BlockedHost()) {
			t.Errorf("muster %v does not show the Blocked host:\n%s", args, o.String())
		}
		if args[0] == "report" && !strings.Contains(o.String(), "Provider usage") {
			t.Errorf("muster report does not show the provider's usage:\n%s", o.String())
		}
	}
}

// TestGateBlockedIsEnvironmentError: a gate that fails after muster's
// proxy refused it a host (gates' default policy is none) stops the run
// as an environment error naming the host and allow_hosts, with a Blocked
// event; the task is not charged.
func TestGateBlockedIsEnvironmentError(t *testing.T) {
	blockedStep(t, "[gates]\nfetch = \"curl -sSf --noproxy '' -o /dev/null http://127.0.0.1:%s/\"\n", "[gates] allow_hosts")
}

// TestSetupBlockedIsEnvironmentError: the same for a setup step ([setup]
// network is allowlist, and the host is not on the list).
func TestSetupBlockedIsEnvironmentError(t *testing.T) {
	blockedStep(t, "[setup]\ncommands = [\"curl -sSf --noproxy '' -o /dev/null http://127.0.0.1:%s/\"]\n", "[setup] allow_hosts")
}

func blockedStep(t *testing.T, table, key string) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer host.Close()
	repo := testRepo(t)
	toml := "[executors.sim]\nkind = \"sim\"\n\n" + fmt.Sprintf(table, portOf(t, host.URL))
	for name, body := range map[string]string{"muster.toml": toml, "plan.md": "# Plan: g\n\n## [ ] a: A\nOwns: a.txt\nReview: none\n\nWrite a.txt.\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "plan")
	var out, errOut bytes.Buffer
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := cli.Execute(context.Background(), io, []string{"run", filepath.Join(repo, "plan.md"), "--repo", repo, "--json", "--run-id", "g1"})
	if code != 3 {
		t.Fatalf("muster run exited %d, want 3 (an environment error)\n%s", code, errOut.String())
	}
	want := "127.0.0.1:" + portOf(t, host.URL)
	if !strings.Contains(errOut.String(), want) || !strings.Contains(errOut.String(), key) {
		t.Errorf("the error does not name the host and %s:\n%s", key, errOut.String())
	}
	blocked := false
	for _, line := range strings.Split(out.String(), "\n") {
		var e muster.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == muster.EvBlocked && e.BlockedHost() == want {
			blocked = true
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == muster.EvTaskFailed && e.Task == "a" && !e.Retry {
			t.Errorf("the task was charged: %+v", e)
		}
	}
	if !blocked && key == "[gates] allow_hosts" {
		t.Errorf("no Blocked event for %s:\n%s", want, out.String())
	}
}

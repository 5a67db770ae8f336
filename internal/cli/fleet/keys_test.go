package fleet_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/mockllm"
	"github.com/muster-run/muster/mockllm/mockllmtest"
)

// keyAgent is a worker's command agent: it looks for the provider key
// (its marker) in its environment, in every process's environment and
// command line it can see, and in the files muster gave it; then it
// calls its model through muster's endpoint with what it holds.
const keyAgent = `#!/bin/sh
r=""
if env | grep -q Fk8wQp3Rt; then r="$r env:FOUND"; fi
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
	if { tr '\0' '\n' < "$f" | grep -q Fk8wQp3Rt; } 2>/dev/null; then r="$r proc:FOUND:$f"; fi
done
# (the clone, where this script is, may lie under /tmp)
f=$(grep -rls Fk8wQp3Rt "$HOME" "${TMPDIR:-/tmp}" 2>/dev/null | grep -v '/agent\.sh$')
[ -n "$f" ] && r="$r files:FOUND:$f"
code=$(curl -sS -o model.json -w '%{http_code}' -H "Authorization: Bearer $FLEET_E2E_KEY" -H 'Content-Type: application/json' \
  -d '{"model":"m1","input":"hi"}' "$MUSTER_MODEL_BASE_URL/responses" 2>&1)
echo "held=$FLEET_E2E_KEY model=$code$r" > out.txt
`

// TestWorkerAgentsBehindEndpoint: a worker holds its executor's provider
// key in its own environment and serves muster's model endpoint to its
// agents as a local run does: its confined command agent finds the key
// nowhere it can look (its environment, any /proc it can see, its
// files) and holds the placeholder, while its model request reaches the
// provider with the real key through the worker's endpoint, and the
// provider's usage reaches the orchestrator's journal.
func TestWorkerAgentsBehindEndpoint(t *testing.T) {
	st := confine.Probe()
	if !st.Available() {
		t.Skipf("this system cannot confine agents: %s", st.Reason)
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	const key = "sk-fleet-Fk8wQp3Rt-real"
	srv := mockllmtest.Start(t, &mockllm.Script{Scenarios: []mockllm.Scenario{{Name: "default", Steps: []mockllm.Step{
		{Text: "hello", Usage: &mockllm.Usage{InputTokens: 40, OutputTokens: 2}}}}}})
	e := newEnv(t)
	e.initRepo(map[string]string{"agent.sh": keyAgent})
	plan := e.write("plan.md", "# Plan: keys\n\n## [ ] k: Look for the key\nOwns: out.txt, model.json\nReview: none\n")
	// Only the worker holds the key.
	vars := e.vars
	e.vars = append(append([]string(nil), vars...), "FLEET_E2E_KEY="+key)
	e.worker("w1", fmt.Sprintf(`[fleet]
lease = "2s"

[run]
confine = "required"

[executors.sh]
kind = "command"
command = ["./agent.sh"]
base_url = %q
api_key_env = "FLEET_E2E_KEY"
`, srv.URL+"/v1"))
	e.vars = vars
	code, out, errs := e.run(e.repo, 90*time.Second, "run", plan, "--nats", e.url, "--run-id", "keys")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	got := e.git("show", "muster/keys:out.txt")
	if got != "held="+muster.PlaceholderKey+" model=200" {
		t.Errorf("the worker's agent reports %q, want the placeholder, a 200 and nothing found", got)
	}
	if strings.Contains(out, "Fk8wQp3Rt") || strings.Contains(errs, "Fk8wQp3Rt") {
		t.Error("the key reached the orchestrator's output")
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
	provider := false
	for _, ev := range e.journal("keys") {
		if ev["type"] == string(muster.EvTokensUsed) && ev["source"] == string(muster.UsageProvider) && ev["input_tokens"] == float64(40) {
			provider = true
		}
	}
	if !provider {
		t.Error("the provider's usage seen by the worker's endpoint is not in the orchestrator's journal")
	}
}

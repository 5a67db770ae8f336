package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// knownKinds is the registry's list as messages name it.
var knownKinds = strings.Join(muster.ExecutorKinds, ", ")

func TestLoadSample(t *testing.T) {
	t.Parallel()
	cfg, err := Load("testdata/muster.toml")
	if err != nil {
		t.Fatal(err)
	}
	no := false
	wantRun := muster.RunConfig{
		MaxParallel: 6, OnFailure: "stop", BudgetUSDMicros: 20_500_000, BudgetTokens: 2_000_000,
		Writers: 1, OnViolation: "discard", Noop: "complete", MaxRounds: 4, VerifyIntegration: &no,
		Approve: []muster.Authority{"shell"}, RequireApproval: []muster.Authority{"write"},
		Keep: []string{".env.local", "node_modules/"}, Grace: 15 * time.Second, GateTimeout: 10 * time.Minute,
		Reviewers: 2, StallTimeout: 5 * time.Minute, PricesFile: "prices.json",
	}
	if !reflect.DeepEqual(cfg.Run, wantRun) {
		t.Errorf("run:\n got %+v\nwant %+v", cfg.Run, wantRun)
	}
	wantExec := []*muster.ExecutorSpec{
		{Name: "local", Kind: "command", Clones: 2, Roles: []muster.Role{"coder"}, Command: []string{"./scripts/agent.sh", "--fast"}, Timeout: 20 * time.Minute, Line: 21},
		{Name: "claude", Kind: "claude-code", Clones: 3, Roles: []muster.Role{"coder", "reviewer"}, Model: "claude-sonnet-4-5",
			BaseURL: "http://127.0.0.1:8080", APIKeyEnv: "MY_ANTHROPIC_KEY", Env: map[string]string{"NO_PROXY": "localhost"},
			Args: []string{"--verbose"}, MaxConcurrent: 2, Line: 27},
		{Name: "sim", Kind: "sim", Clones: 1, Roles: []muster.Role{"coder"}, Seed: 42, Speed: 0.5, Line: 38},
	}
	if !reflect.DeepEqual(cfg.Executors, wantExec) {
		for i := range cfg.Executors {
			t.Errorf("executor %d: %+v", i, *cfg.Executors[i])
		}
	}
	wantGates := []muster.GateSpec{{Name: "test", Command: "go test ./...", Line: 44}, {Name: "build", Command: "go build ./...", Line: 45}, {Name: "vet", Command: "go vet ./...", Line: 46}}
	if !reflect.DeepEqual(cfg.Gates, wantGates) {
		t.Errorf("gates: %+v", cfg.Gates)
	}
	if cfg.Source != "testdata/muster.toml" || cfg.Grace() != 15*time.Second || cfg.MaxRounds() != 4 {
		t.Errorf("source %q grace %v rounds %d", cfg.Source, cfg.Grace(), cfg.MaxRounds())
	}
}

func TestDefaultsAndEmpty(t *testing.T) {
	t.Parallel()
	cfg, probs := Parse("m.toml", nil)
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	d := Default()
	d.Source = "m.toml"
	if !reflect.DeepEqual(cfg, d) {
		t.Errorf("empty file: %+v, want %+v", cfg, d)
	}
	if d.Run.OnFailure != "continue" || d.Run.OnViolation != "fail" || d.Run.Noop != "fail" || len(d.Executors) != 0 {
		t.Errorf("default: %+v", d)
	}
	cfg, probs = Parse("m.toml", []byte("[executors.a]\nkind = \"sim\"\n[executors.b]\nkind = \"codex\"\nclones = 1\n"))
	if len(probs) != 0 || cfg.Executors[0].Clones != 1 || !reflect.DeepEqual(cfg.Executors[1].Roles, []muster.Role{"coder"}) {
		t.Errorf("defaults: %v %+v", probs, cfg.Executors)
	}
}

func TestParseProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"syntax", "[run]\nmax_parallel = = 3\n", []string{`m.toml:2: bad TOML: unexpected character U+003D '=' at start of value`}},
		{"duplicate", "[run]\nnoop = \"fail\"\nnoop = \"fail\"\n", []string{`m.toml:3: bad TOML: key noop is already defined`}},
		{"unknown top", "[rnu]\nx = 1\n", []string{`m.toml:1: unknown key "rnu"; did you mean "run"?`}},
		{"unknown far", "[zzz]\n", []string{`m.toml:1: unknown key "zzz" (known keys: run, executors, gates, setup, pool, fleet)`}},
		{"pool", "[pool]\nmax_clones = 0\nmax_clone = 3\n", []string{
			`m.toml:2: max_clones: want a whole number, 1 or more`,
			`m.toml:3: unknown key "max_clone" in [pool]; did you mean "max_clones"?`}},
		{"unknown run key", "[run]\nmax_paralel = 3\n", []string{`m.toml:2: unknown key "max_paralel" in [run]; did you mean "max_parallel"?`}},
		{"unknown executor key", "[executors.a]\nkind = \"sim\"\nclone = 2\n", []string{`m.toml:3: unknown key "clone" in [executors.a]; did you mean "clones"?`}},
		{"run not table", "run = 3\n", []string{`m.toml:1: run: want a table`}},
		{"count", "[run]\nmax_parallel = -1\nmax_rounds = 0\nwriters = \"one\"\n", []string{
			`m.toml:2: max_parallel: want a whole number, 0 or more`,
			`m.toml:3: max_rounds: want a whole number, 1 or more`,
			`m.toml:4: writers: want a whole number, 0 or more`}},
		{"policy", "[run]\non_failure = \"halt\"\non_violation = \"ignore\"\nnoop = 1\n", []string{
			`m.toml:2: on_failure: want "stop" or "continue"`,
			`m.toml:3: on_violation: want "fail" or "discard"`,
			`m.toml:4: noop: want "fail" or "complete"`}},
		{"budget", "[run]\nbudget_usd = -2.0\nbudget_tokens = 1.5\n", []string{
			`m.toml:2: budget_usd: want a number, 0 or more`,
			`m.toml:3: budget_tokens: want a whole number, 0 or more`}},
		{"bool", "[run]\nverify_integration = \"no\"\n", []string{`m.toml:2: verify_integration: want true or false`}},
		{"max_batch", "[run]\nmax_batch = 0\n", []string{`m.toml:2: max_batch: want a whole number, 1 or more`}},
		// Too large is not "want 1 or more": the message names the bound.
		{"count too large", "[pool]\nmax_clones = 99999999999\n", []string{`m.toml:2: max_clones: want a whole number, 1 to 2147483647`}},
		{"race", "[run]\nrace = 1\n", []string{`m.toml:2: race: want the number of candidates, 2 to 8, or "first"`}},
		{"race word", "[run]\nrace = \"all\"\n", []string{`m.toml:2: race: want the number of candidates, 2 to 8, or "first"`}},
		{"review_partial", "[run]\nreview_partial = \"yes\"\n", []string{`m.toml:2: review_partial: want "refuse" or "allow"`}},
		{"review_wait", "[run]\nreview_wait = \"-1s\"\n", []string{`m.toml:2: review_wait: want a duration such as "5s", or "0s" for none`}},
		{"caps", "[run]\nmax_file_bytes = 0\nmax_tasks = 0\nmax_task = 3\n", []string{
			`m.toml:2: max_file_bytes: want a number of bytes, 1 to 1099511627776 (the default is 100000000, 100 MB)`,
			`m.toml:3: max_tasks: want a whole number, 1 or more`,
			`m.toml:4: unknown key "max_task" in [run]; did you mean "max_tasks"?`}},
		{"authority", "[run]\napprove = [\"shell\", \"root\"]\nrequire_approval = \"write\"\n", []string{
			`m.toml:2: approve: unknown authority "root": want "read", "write" or "shell"`,
			`m.toml:3: require_approval: want a list of strings, such as ["a", "b"]`}},
		{"duration", "[run]\ngrace = 10\ngate_timeout = \"soon\"\nstall_timeout = \"-1m\"\n", []string{
			`m.toml:2: grace: want a duration such as "20m" or "1h30m"`,
			`m.toml:3: gate_timeout: want a duration such as "20m" or "1h30m"`,
			`m.toml:4: stall_timeout: want a duration such as "20m" or "1h30m"`}},
		{"no kind", "[executors.a]\nclones = 2\n", []string{`m.toml:1: executor a: missing kind (one of ` + knownKinds + ")"}},
		{"bad kind", "[executors.a]\nkind = \"claude\"\n[executors.b]\nkind = \"robot\"\n", []string{
			`m.toml:2: executor a: unknown kind "claude"; did you mean "claude-code"?`,
			`m.toml:4: executor b: unknown kind "robot" (known kinds: ` + knownKinds + ")"}},
		{"command needs command", "[executors.local]\nkind = \"command\"\n", []string{`m.toml:1: executor local: kind "command" needs command = ["program", "arg", ...]`}},
		{"command not list", "[executors.local]\nkind = \"command\"\ncommand = \"./a.sh\"\n", []string{
			`m.toml:1: executor local: kind "command" needs command = ["program", "arg", ...]`,
			`m.toml:3: command: want a list of strings, such as ["a", "b"]`}},
		{"clones", "[executors.a]\nkind = \"sim\"\nclones = 0\n", []string{`m.toml:3: clones: want a whole number, 1 or more`}},
		{"roles empty", "[executors.a]\nkind = \"sim\"\nroles = []\n", []string{`m.toml:3: executor a: roles: want at least one role, such as "coder"`}},
		{"bad role", "[executors.a]\nkind = \"sim\"\nroles = [\"coder\", \"re viewer\"]\n", []string{`m.toml:3: executor a: bad role "re viewer": use letters, digits, ".", "_" and "-"`}},
		{"sim cannot plan", "[executors.a]\nkind = \"sim\"\nroles = [\"coder\", \"planner\"]\n", []string{`m.toml:3: executor a: kind "sim" cannot plan: give the role "planner" to an agent or a command`}},
		{"api key inline", "[executors.a]\nkind = \"openai\"\napi_key_env = \"sk-secret-123\"\n", []string{
			`m.toml:3: executor a: api_key_env: want the name of an environment variable that holds the key, not the key`}},
		{"env", "[executors.a]\nkind = \"openai\"\nenv = { \"BAD NAME\" = \"x\", TOKEN = 12345 }\n", []string{
			`m.toml:3: executor a: env: bad variable name "BAD NAME"`,
			`m.toml:3: executor a: env.TOKEN: want a string`}},
		{"bad executor name", "[executors.\"a#1\"]\nkind = \"sim\"\n", []string{`m.toml:1: bad executor name "a#1": use letters, digits, ".", "_" and "-"`}},
		{"executor not table", "[executors]\na = \"sim\"\n", []string{`m.toml:2: executors.a: want a table`}},
		{"seed speed", "[executors.a]\nkind = \"sim\"\nseed = 1.5\nspeed = -1\n", []string{
			`m.toml:3: seed: want a whole number`,
			`m.toml:4: speed: want a number, 0 or more`}},
		{"gate", "[gates]\ntest = \"\"\nlint = [\"x\"]\n", []string{
			`m.toml:2: gate test: want a command string, such as test = "go test ./..."`,
			`m.toml:3: gate lint: want a command string, such as lint = "go test ./..."`}},
		{"confine", "[run]\nconfine = \"strict\"\nwritable = [\"rel/cache\", 3]\n[executors.a]\nkind = \"sim\"\nwritable = [\"/ok\", \"./no\"]\n", []string{
			`m.toml:2: confine: want "auto", "required" or "off"`,
			`m.toml:3: writable: want a list of strings, such as ["a", "b"]`,
			`m.toml:6: writable: "./no": want an absolute path (or one starting with "~/")`}},
		{"dotted keys", "run.max_parallel = 2\nrun.nope = 1\nexecutors.x.kind = \"sim\"\nexecutors.x.colnes = 3\n", []string{
			`m.toml:2: unknown key "nope" in [run] (known keys: ` + strings.Join(runKeys, ", ") + `)`,
			`m.toml:4: unknown key "colnes" in [executors.x]; did you mean "clones"?`}},
		{"fleet", "[fleet]\nnats = \"nats://u:pw@h:4222\"\npassword_env = \"FLEET_PW\"\nlease = \"soon\"\ncreeds = \"x\"\ntrust_worker_gates = \"yes\"\nrun_ttl = \"-1m\"\n", []string{
			`m.toml:2: nats: no credentials in the URL: set [fleet] creds to a file muster fleet credentials issued`,
			`m.toml:3: password_env: a fleet no longer shares a user, a password or nkeys: each host holds credentials of its own; issue them with muster fleet credentials NAME --store DIR -o FILE and set [fleet] creds = "FILE" (docs/fleet.md)`,
			`m.toml:4: lease: want a duration such as "20m" or "1h30m"`,
			`m.toml:5: unknown key "creeds" in [fleet]; did you mean "creds"?`,
			`m.toml:6: trust_worker_gates: want true or false`,
			`m.toml:7: run_ttl: want a duration such as "20m" or "1h30m"`}},
	} {
		_, probs := Parse("m.toml", []byte(tc.src))
		var got []string
		for _, p := range probs {
			got = append(got, p.String())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestConfineKeys(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	cfg, probs := Parse("m.toml", []byte("[run]\nconfine = \"required\"\nwritable = [\"~/.cache/go-build\", \"/var/cache//x/\"]\nhide = [\"~/.kube\", \"/srv/s/\"]\n[executors.a]\nkind = \"sim\"\nwritable = [\"/opt/a\"]\n"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	if cfg.Run.Confine != muster.ConfineRequired {
		t.Errorf("confine %q", cfg.Run.Confine)
	}
	if want := []string{filepath.Join(home, ".cache/go-build"), "/var/cache/x"}; !reflect.DeepEqual(cfg.Run.Writable, want) {
		t.Errorf("run writable %q, want %q", cfg.Run.Writable, want)
	}
	if want := []string{"/opt/a"}; !reflect.DeepEqual(cfg.Executors[0].Writable, want) {
		t.Errorf("executor writable %q, want %q", cfg.Executors[0].Writable, want)
	}
	if want := []string{filepath.Join(home, ".kube"), "/srv/s"}; !reflect.DeepEqual(cfg.Run.Hide, want) {
		t.Errorf("run hide %q, want %q", cfg.Run.Hide, want)
	}
	if _, probs := Parse("m.toml", []byte("[run]\nhide = [\"relative\"]\n")); len(probs) != 1 || !strings.Contains(probs.Error(), "absolute path") {
		t.Errorf("relative hide path: %v", probs)
	}
}

func TestSecretsNotEchoed(t *testing.T) {
	t.Parallel()
	src := "[executors.a]\nkind = \"openai\"\napi_key_env = \"sk-live-SECRET\"\nenv = { KEY = 999 }\n"
	_, probs := Parse("m.toml", []byte(src))
	if len(probs) == 0 || strings.Contains(probs.Error(), "SECRET") || strings.Contains(probs.Error(), "999") {
		t.Errorf("problems echo a secret or are missing: %v", probs)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "muster.toml"))
	var me *muster.Error
	if !errors.As(err, &me) || muster.ErrorCode(err) != muster.CodeInvalid || !strings.Contains(err.Error(), filepath.Join(dir, "muster.toml")) {
		t.Errorf("missing: %v", err)
	}
	path := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(path, []byte("[run]\nmax_parallel = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	var ps muster.Problems
	if !errors.As(err, &ps) || muster.ErrorCode(err) != muster.CodeInvalid || err.Error() != path+":2: max_parallel: want a whole number, 0 or more" {
		t.Errorf("bad: %v", err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := Resolve(dir, "")
	if err != nil || !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("no file: %+v %v", cfg, err)
	}
	if _, err := Resolve(dir, filepath.Join(dir, "other.toml")); muster.ErrorCode(err) != muster.CodeInvalid {
		t.Errorf("missing --config: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("[executors.s]\nkind = \"sim\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = Resolve(dir, "")
	if err != nil || len(cfg.Executors) != 1 || cfg.Source != filepath.Join(dir, FileName) {
		t.Errorf("repo file: %+v %v", cfg, err)
	}
}

func TestParseFleet(t *testing.T) {
	cfg, probs := Parse("m.toml", []byte("[fleet]\nnats = \"tls://fleet.example:4222\"\ncreds = \"w1.creds\"\ntls_ca = \"ca.pem\"\nlease = \"20s\"\ntrust_worker_gates = true\nrun_ttl = \"10m\"\njoin_wait = \"2m\"\n"))
	if len(probs) > 0 {
		t.Fatal(probs)
	}
	f := cfg.Fleet
	if f.NATS != "tls://fleet.example:4222" || f.Creds != "w1.creds" || !f.TrustWorkerGates || f.TLSCA != "ca.pem" || f.Lease != 20*time.Second || f.RunTTL != 10*time.Minute || f.JoinWait != 2*time.Minute || f.JoinWaitOrDefault() != 2*time.Minute {
		t.Fatalf("fleet: %+v", f)
	}
}

func TestParsePool(t *testing.T) {
	cfg, probs := Parse("m.toml", []byte("[pool]\nmax_clones = 5\n"))
	if len(probs) > 0 || cfg.Pool.MaxClones != 5 {
		t.Errorf("pool %+v, problems %v", cfg.Pool, probs)
	}
	if cfg, _ := Parse("m.toml", nil); cfg.Pool.MaxClones != 0 {
		t.Errorf("default pool %+v", cfg.Pool)
	}
}

func TestCapKeys(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("m.toml", []byte("[run]\nmax_file_bytes = 5_000_000_000\nmax_tasks = 40\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Run.MaxFileBytes != 5_000_000_000 || cfg.Run.MaxTasks != 40 || cfg.MaxTasksFor(3) != 40 {
		t.Errorf("run %+v", cfg.Run)
	}
	if def := (&muster.Config{}); def.MaxTasksFor(3) != 100 || def.MaxTasksFor(50) != 500 {
		t.Errorf("default caps %d %d", def.MaxTasksFor(3), def.MaxTasksFor(50))
	}
}

func TestRunRace(t *testing.T) {
	for src, want := range map[string]muster.RunConfig{
		"[run]\nrace = 3\n":         {Race: 3},
		"[run]\nrace = \"first\"\n": {RaceFirst: true},
	} {
		cfg, probs := Parse("m.toml", []byte(src))
		if len(probs) > 0 || cfg.Run.Race != want.Race || cfg.Run.RaceFirst != want.RaceFirst {
			t.Errorf("%q: %v race %d first %v", src, probs, cfg.Run.Race, cfg.Run.RaceFirst)
		}
	}
}

func TestMaxBatch(t *testing.T) {
	cfg, probs := Parse("m.toml", []byte("[run]\nmax_batch = 3\n"))
	if len(probs) > 0 || cfg.Run.MaxBatch != 3 || cfg.MaxBatch() != 3 {
		t.Fatalf("%v %+v", probs, cfg)
	}
	if d := (&muster.Config{}).MaxBatch(); d != muster.DefaultMaxBatch {
		t.Fatalf("default %d", d)
	}
}

// [run] review_wait: 5 s by default, "0s" for none (issue 25).
func TestReviewWait(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]time.Duration{"": muster.DefaultReviewWait, "[run]\nreview_wait = \"2s\"\n": 2 * time.Second, "[run]\nreview_wait = \"0s\"\n": 0} {
		cfg, probs := Parse("m.toml", []byte(text))
		if len(probs) != 0 || cfg.ReviewWait() != want {
			t.Errorf("%q: %v %v, want %v", text, cfg.ReviewWait(), probs, want)
		}
	}
}

// TestRoleSpelledInAnotherCase: roles are free-form, but one that is a
// built-in role in another case ("Coder") is a mistake muster names in
// the config, not later as "no executor has role coder" in the plan.
func TestRoleSpelledInAnotherCase(t *testing.T) {
	_, probs := Parse("m.toml", []byte("[executors.x]\nkind = \"sim\"\nroles = [\"Coder\", \"tester\"]\n"))
	want := `m.toml:3: executor x: role "Coder": did you mean "coder"? (roles are lower case)`
	if probs.Error() != want {
		t.Errorf("got %q\nwant %q", probs.Error(), want)
	}
}

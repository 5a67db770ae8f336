package doctor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
)

const secret = "sk-doctor-secret-value-31"

func fakeCLI(t *testing.T, out string, exit int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake")
	body := "#!/bin/sh\necho '" + out + "'\nexit " + string(rune('0'+exit)) + "\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func opts(env map[string]string) Options {
	return Options{
		Getenv:         func(k string) string { return env[k] },
		HasLogin:       func(*agentkit.Kind) bool { return false },
		VersionTimeout: 30 * time.Second,
	}
}

func TestCheck(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin") // the added kinds: not found, not started
	t.Chdir(t.TempDir())
	good := fakeCLI(t, "9.9.9 (Fake)", 0)
	broken := fakeCLI(t, "boom", 1)
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{
		{Name: "ok", Kind: muster.ExecClaudeCode, APIKeyEnv: "GOOD_KEY", Command: []string{good}},
		{Name: "nokey", Kind: muster.ExecCodex, APIKeyEnv: "UNSET_KEY", Command: []string{good}},
		{Name: "nobin", Kind: muster.ExecGemini, Command: []string{filepath.Join(t.TempDir(), "absent")}},
		{Name: "broken", Kind: muster.ExecOpencode, Command: []string{broken}, APIKeyEnv: "GOOD_KEY"},
		{Name: "local", Kind: muster.ExecOpenAI, BaseURL: "http://127.0.0.1:8080/v1"},
		{Name: "sim", Kind: muster.ExecSim},
	}}
	res := Check(context.Background(), cfg, opts(map[string]string{"GOOD_KEY": secret}))
	// The known kinds no executor uses are added.
	if want := 6 + listed(cfg); len(res) != want {
		t.Fatalf("%d results, want %d", len(res), want)
	}
	by := map[string]Result{}
	for _, r := range res {
		by[r.Executor] = r
	}
	if r := by["ok"]; !r.OK() || r.Version != "9.9.9 (Fake)" || r.Credentials != CredSet || r.Binary != good {
		t.Errorf("ok: %+v", r)
	}
	if r := by["nokey"]; r.OK() || r.Credentials != CredMissing || r.CredentialVar != "UNSET_KEY" {
		t.Errorf("nokey: %+v", r)
	}
	if r := by["nobin"]; r.OK() || r.Found {
		t.Errorf("nobin: %+v", r)
	}
	if r := by["broken"]; r.OK() || !strings.Contains(strings.Join(r.Problems, " "), "exit status 1") {
		t.Errorf("broken: %+v", r)
	}
	if r := by["local"]; !r.OK() || r.Credentials != CredNotNeed {
		t.Errorf("local: %+v", r)
	}
	if r := by["sim"]; !r.OK() {
		t.Errorf("sim: %+v", r)
	}
	if got := Failed(res); !slices.Equal(got, []string{"broken", "nobin", "nokey"}) {
		t.Errorf("failed %v", got)
	}
	var text, js bytes.Buffer
	if err := WriteText(&text, res); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), js.String()} {
		if strings.Contains(out, secret) {
			t.Fatal("credential value printed")
		}
	}
	for _, w := range []string{"GOOD_KEY: set", "UNSET_KEY: missing", "enforced", "full", "9.9.9 (Fake)"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
}

func TestCheckAddsKnownKinds(t *testing.T) {
	// The installed CLIs out of reach: the kinds are reported missing at
	// once instead of being started.
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Chdir(t.TempDir())
	res := Check(context.Background(), nil, Options{
		Getenv:   func(string) string { return "" },
		HasLogin: func(k *agentkit.Kind) bool { return k.Name == muster.ExecCodex },
	})
	if want := listed(nil); len(res) != want {
		t.Fatalf("%d results, want %d", len(res), want)
	}
	for _, r := range res {
		if r.Executor != "" {
			t.Errorf("unconfigured kind has executor %q", r.Executor)
		}
		if r.Kind == muster.ExecCodex && r.Credentials != CredLogin {
			t.Errorf("codex credentials %q", r.Credentials)
		}
		// A login's token lies in the sandbox: doctor says so (issue 22).
		if said := strings.Contains(strings.Join(r.Warnings, "\n"), "runs on your subscription login"); said != (r.Credentials == CredLogin) {
			t.Errorf("%s: credentials %q, warnings %q", r.Kind, r.Credentials, r.Warnings)
		}
	}
	if len(Failed(res)) != 0 {
		t.Error("unconfigured kinds must not fail the doctor")
	}
}

// listed counts the known kinds doctor adds to cfg's executors: those with
// a program of their own that no executor uses.
func listed(cfg *muster.Config) int {
	used := map[muster.ExecKind]bool{}
	if cfg != nil {
		for _, e := range cfg.Executors {
			used[e.Kind] = true
		}
	}
	n := 0
	for _, k := range agentkit.Kinds {
		if k.Binary != "" && !used[k.Name] {
			n++
		}
	}
	return n
}

// TestACPHandshake: an ACP agent's version comes from its initialize
// reply; one that does not answer is a problem.
func TestACPHandshake(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "acp-agent")
	if err := os.WriteFile(good, []byte("#!/bin/sh\nread line\n"+
		`echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"agentInfo":{"name":"sh-acp","version":"0.0.7"}}}'`+
		"\ncat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	mute := filepath.Join(dir, "mute-agent")
	if err := os.WriteFile(mute, []byte("#!/bin/sh\necho not json\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{
		{Name: "good", Kind: muster.ExecACP, Command: []string{good}},
		{Name: "mute", Kind: muster.ExecACP, Command: []string{mute}},
		{Name: "none", Kind: muster.ExecACP},
	}}
	o := opts(nil)
	o.OnlyConfigured, o.VersionTimeout = true, 10*time.Second
	res := Check(context.Background(), cfg, o)
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	if r := res[0]; !r.OK() || r.Version != "0.0.7 (sh-acp, ACP v1)" || r.Credentials != CredNotKnown {
		t.Errorf("good: %+v", r)
	}
	if r := res[1]; r.OK() || !strings.Contains(strings.Join(r.Problems, ";"), "ACP handshake") {
		t.Errorf("mute: %+v", r)
	}
	if r := res[2]; r.OK() || !strings.Contains(strings.Join(r.Problems, ";"), "no command configured") {
		t.Errorf("none: %+v", r)
	}
}

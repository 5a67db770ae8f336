package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/agentkit"
)

// hideAgents keeps the installed agent CLIs out of a test's reach (no
// PATH entry, a working directory without .cache/agents): the unconfigured
// kinds doctor adds are then reported missing at once instead of being
// started.
func hideAgents(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Chdir(t.TempDir())
}

func TestNewCmd(t *testing.T) {
	hideAgents(t)
	bin := filepath.Join(t.TempDir(), "fake")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 1.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MUSTER_DOCTOR_TEST_KEY", "sk-cli-doctor-secret")
	cases := []struct {
		name string
		cfg  *muster.Config
		code muster.Code
		ok   bool
	}{
		{"runnable", &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "c", Kind: muster.ExecClaudeCode,
			Command: []string{bin}, APIKeyEnv: "MUSTER_DOCTOR_TEST_KEY"}}}, 0, true},
		{"missing key", &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "c", Kind: muster.ExecClaudeCode,
			Command: []string{bin}, APIKeyEnv: "MUSTER_DOCTOR_UNSET_KEY"}}}, muster.CodeFailed, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := NewCmd(func() (*muster.Config, error) { return c.cfg, nil })
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&bytes.Buffer{})
			cmd.SetArgs([]string{"--json"})
			err := cmd.Execute()
			if c.ok != (err == nil) {
				t.Fatalf("err %v", err)
			}
			if err != nil && muster.ErrorCode(err) != c.code {
				t.Errorf("code %v", muster.ErrorCode(err))
			}
			var res []map[string]any
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if want := listed(); len(res) != want {
				t.Errorf("%d results, want %d", len(res), want)
			}
			if bytes.Contains(out.Bytes(), []byte("sk-cli-doctor-secret")) {
				t.Error("secret printed")
			}
		})
	}
}

func TestConfigError(t *testing.T) {
	want := errors.New("muster.toml:3: bad")
	cmd := NewCmd(func() (*muster.Config, error) { return nil, want })
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(nil)
	if err := cmd.Execute(); !errors.Is(err, want) {
		t.Fatalf("err %v", err)
	}
}

// listed counts the known kinds with a program of their own (doctor lists
// them when no executor uses them).
func listed() int {
	n := 0
	for _, k := range agentkit.Kinds {
		if k.Binary != "" {
			n++
		}
	}
	return n
}

// TestNamespacesLayer: doctor names the namespaces layer, and with
// confine = "required" a missing one fails it (exit 1) naming why.
func TestNamespacesLayer(t *testing.T) {
	hideAgents(t)
	landlock := func() confine.Status { return confine.Status{ABI: 7} }
	for _, c := range []struct {
		name         string
		mode         muster.ConfineMode
		reason, want string
		fail         bool
	}{
		{"available", "", "", "namespaces: user, PID, mount, network, IPC", false},
		{"network", "", "", "network: network namespaces available: each invocation has only its own loopback and muster's model endpoint and proxy on its bridge (agents provider, gates none, setup allowlist)", false},
		{"missing auto", "", "no user namespaces (simulated)", "namespaces: unavailable: no user namespaces (simulated); Landlock", false},
		{"no network namespaces", "", "no user namespaces (simulated)", "network: no network namespaces here: muster's model endpoint and proxy listen on the host's loopback", false},
		{"missing required", muster.ConfineRequired, "no user namespaces (simulated)", "namespaces: unavailable", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := &muster.Config{Run: muster.RunConfig{Confine: c.mode}}
			opts := &Options{LoadConfig: func() (*muster.Config, error) { return cfg, nil }, Probe: landlock,
				Namespaces: func() string { return c.reason }}
			var out bytes.Buffer
			err := Run(context.Background(), opts, &out)
			if !strings.Contains(out.String(), c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out.String())
			}
			if c.fail != (err != nil) || c.fail && !strings.Contains(err.Error(), c.reason) {
				t.Errorf("err %v", err)
			}
		})
	}
}

// TestLauncherLine: doctor says what starts the sandboxes: the launcher
// beside muster, muster itself (and how to start them sooner), or why the
// one installed cannot serve.
func TestLauncherLine(t *testing.T) {
	for _, c := range []struct{ launcher, warning, want string }{
		{"/bin/muster-confine", "", "sandbox launcher: /bin/muster-confine"},
		{"/bin/muster", "", "sandbox launcher: muster itself (install muster-confine beside it"},
		{"/bin/muster", "/bin/muster-confine is from another build", "warning: /bin/muster-confine is from another build"},
	} {
		if got := launcherLine("/bin/muster", c.launcher, c.warning); !strings.HasPrefix(got, c.want) {
			t.Errorf("launcherLine(%q, %q) = %q, want %q...", c.launcher, c.warning, got, c.want)
		}
	}
	hideAgents(t)
	opts := &Options{LoadConfig: func() (*muster.Config, error) { return &muster.Config{}, nil },
		Probe: func() confine.Status { return confine.Status{ABI: 7} }, Namespaces: func() string { return "" }}
	var out bytes.Buffer
	_ = Run(context.Background(), opts, &out)
	if !strings.Contains(out.String(), "sandbox launcher: muster itself") {
		t.Errorf("doctor does not say what starts the sandboxes (this test binary has no launcher beside it):\n%s", out.String())
	}
}

// TestDoctorWarnsAsRoot (issue 21, item 4): doctor warns when muster runs
// as root, and only then.
func TestDoctorWarnsAsRoot(t *testing.T) {
	hideAgents(t)
	cfg := &muster.Config{}
	opts := &Options{LoadConfig: func() (*muster.Config, error) { return cfg, nil },
		Probe: func() confine.Status { return confine.Status{ABI: 7} }, Namespaces: func() string { return "" }}
	var out bytes.Buffer
	_ = Run(context.Background(), opts, &out)
	got := strings.Contains(out.String(), "warning: muster runs as root: its agents run as uid 0 without capabilities")
	if got != (os.Geteuid() == 0) {
		t.Errorf("uid %d, root warning shown %v:\n%s", os.Geteuid(), got, out.String())
	}
}

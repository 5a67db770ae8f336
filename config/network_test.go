package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

func TestNetworkKeys(t *testing.T) {
	t.Parallel()
	doc := `[run]
network = "allowlist"
allow_hosts = ["proxy.example.org", "127.0.0.1:8080"]

[executors.a]
kind = "command"
command = ["true"]
network = "open"
allow_hosts = ["[::1]:9000"]

[executors.b]
kind = "command"
command = ["true"]

[gates]
test = "go test ./..."
network = "allowlist"
allow_hosts = ["db.internal"]
host_ports = [5432]

[setup]
network = "open"
allow_hosts = ["*.example.org"]
`
	cfg, probs := Parse("m.toml", []byte(doc))
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	if got := cfg.AgentNetwork(cfg.Executor("a")); got.Policy != muster.NetOpen || !reflect.DeepEqual(got.AllowHosts, []string{"proxy.example.org", "127.0.0.1:8080", "[::1]:9000"}) {
		t.Errorf("executor a: %+v", got)
	}
	if got := cfg.AgentNetwork(cfg.Executor("b")); got.Policy != muster.NetAllowlist {
		t.Errorf("executor b: %+v", got)
	}
	if len(cfg.Gates) != 1 || cfg.Gates[0].Name != "test" {
		t.Errorf("gates: %+v", cfg.Gates)
	}
	g := cfg.GateNetwork()
	if g.Policy != muster.NetAllowlist || !reflect.DeepEqual(g.AllowHosts, []string{"db.internal"}) || !reflect.DeepEqual(g.HostPorts, []int{5432}) {
		t.Errorf("gates network: %+v", g)
	}
	if s := cfg.SetupNetworkOf(); s.Policy != muster.NetOpen || !reflect.DeepEqual(s.AllowHosts, []string{"*.example.org"}) {
		t.Errorf("setup network: %+v", s)
	}
}

func TestNetworkDefaults(t *testing.T) {
	t.Parallel()
	cfg, probs := Parse("m.toml", nil)
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	if cfg.AgentNetwork(nil).Policy != muster.NetProvider || cfg.GateNetwork().Policy != muster.NetNone || cfg.SetupNetworkOf().Policy != muster.NetAllowlist {
		t.Errorf("defaults: %v %v %v", cfg.AgentNetwork(nil), cfg.GateNetwork(), cfg.SetupNetworkOf())
	}
}

func TestNetworkProblems(t *testing.T) {
	t.Parallel()
	doc := `[run]
network = "everything"
allow_hosts = ["https://example.org/x"]

[gates]
host_ports = [0]

[setup]
netwrk = "open"
`
	_, probs := Parse("m.toml", []byte(doc))
	want := []string{
		`m.toml:2: network: want "provider", "allowlist", "open" or "none"`,
		`m.toml:3: allow_hosts: "https://example.org/x": want a host name`,
		`m.toml:6: host_ports: want a list of ports from 1 to 65535`,
		`m.toml:9: unknown key "netwrk" in [setup]; did you mean "network"?`,
	}
	if len(probs) != len(want) {
		t.Fatalf("problems: %v", probs)
	}
	for i, w := range want {
		if !strings.HasPrefix(probs[i].String(), w) {
			t.Errorf("problem %d: %q, want prefix %q", i, probs[i].String(), w)
		}
	}
}

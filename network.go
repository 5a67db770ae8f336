package muster

import (
	"net"
	"strconv"
	"strings"
)

// NetworkPolicy is what one confined invocation may reach over the
// network (ARCHITECTURE.md §8.5): [run] network for agents (an executor's
// network overrides it), [gates] network for gates and Kind: code steps,
// [setup] network for setup steps.
type NetworkPolicy string

// Network policies.
const (
	// NetProvider: the model endpoint only (muster forwards the kind's
	// inference requests to the executor's provider, with the real key);
	// every other request is refused and recorded as Blocked.
	NetProvider NetworkPolicy = "provider"
	// NetAllowlist: the model endpoint and, through muster's HTTP proxy,
	// the hosts of allow_hosts.
	NetAllowlist NetworkPolicy = "allowlist"
	// NetOpen: the model endpoint and, through the proxy, any public host
	// (loopback, link-local, private and unique-local addresses stay
	// refused unless allow_hosts names the literal address).
	NetOpen NetworkPolicy = "open"
	// NetNone: nothing but the invocation's own loopback.
	NetNone NetworkPolicy = "none"
)

// NetworkPolicies lists the policies in the order of the documentation.
var NetworkPolicies = []string{string(NetProvider), string(NetAllowlist), string(NetOpen), string(NetNone)}

// Defaults of the network policy at each level.
const (
	DefaultAgentNetwork = NetProvider
	DefaultGateNetwork  = NetNone
	DefaultSetupNetwork = NetAllowlist
)

// Network is one invocation's network: its policy and the hosts its
// proxy lets it reach.
type Network struct {
	Policy NetworkPolicy `json:"network,omitempty"`
	// AllowHosts are "host" or "host:port" entries; a literal address
	// ("127.0.0.1:8080", "[::1]:9000") is how a loopback or private
	// address is let through.
	AllowHosts []string `json:"allow_hosts,omitempty"`
	// HostPorts are ports of the host's loopback opened to the invocation
	// ([gates] host_ports: a test database).
	HostPorts []int `json:"host_ports,omitempty"`
}

// GatesNetwork is the network part of the [gates] table.
type GatesNetwork = Network

// SetupNetwork is the network part of the [setup] table.
type SetupNetwork = Network

// AgentNetwork is the network of the agents of executor e: the
// executor's network, else [run] network, else provider; allow_hosts of
// both levels together.
func (c *Config) AgentNetwork(e *ExecutorSpec) Network {
	n := Network{Policy: c.Run.Network, AllowHosts: append([]string(nil), c.Run.AllowHosts...)}
	if e != nil {
		if e.Network != "" {
			n.Policy = e.Network
		}
		n.AllowHosts = append(n.AllowHosts, e.AllowHosts...)
	}
	if n.Policy == "" {
		n.Policy = DefaultAgentNetwork
	}
	return n
}

// GateNetwork is the network of gates and Kind: code steps.
func (c *Config) GateNetwork() Network {
	n := c.GatesNet
	if n.Policy == "" {
		n.Policy = DefaultGateNetwork
	}
	return n
}

// SetupNetworkOf is the network of setup steps.
func (c *Config) SetupNetworkOf() Network {
	n := c.SetupNet
	if n.Policy == "" {
		n.Policy = DefaultSetupNetwork
	}
	return n
}

// ModelEndpoint is how an agent invocation reaches its provider through
// muster (ExecRequest.Endpoint): the base URL to give the agent in place
// of the provider's, and the placeholder to give it where its CLI insists
// on a key. The real key never reaches the agent.
type ModelEndpoint struct {
	// BaseURL is muster's endpoint, with the path of the executor's real
	// base URL ("http://127.0.0.1:PORT/v1").
	BaseURL string
	// Key is the placeholder key (PlaceholderKey).
	Key string
	// Proxy is the URL of muster's HTTP proxy for HTTPS_PROXY and
	// HTTP_PROXY; empty when the policy allows no host beside the
	// provider.
	Proxy string
}

// NetSession is the network one gate or setup step gets beyond its own
// loopback: muster's proxy with the step's policy (egress.Open).
type NetSession struct {
	// Env points the step's tools at the proxy (HTTPS_PROXY, NO_PROXY...).
	Env map[string]string
	// Bridge serves the proxy inside the step's network namespace, at the
	// port Env names (the step runs in one when its policy is not open and
	// the confinement step builds namespaces).
	Bridge *Bridge
	// Close ends the session and returns the hosts ("host:port") the
	// proxy refused the step.
	Close func() []string
}

// NetOpener opens a NetSession for a step of network n.
type NetOpener func(n Network) (*NetSession, error)

// PlaceholderKey is what an agent behind muster's endpoint gets for its
// key: not a credential, so nothing it leaks is one.
const PlaceholderKey = "muster-placeholder-key"

// ModelBaseURLVar is the variable that tells a command, generic ACP or
// Copilot executor where muster's model endpoint is.
const ModelBaseURLVar = "MUSTER_MODEL_BASE_URL"

// BlockedHost is "host:port" of a Blocked event.
func (e *Event) BlockedHost() string {
	if e.Port == 0 {
		return e.Host
	}
	return net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
}

// BlockedEvent is the Blocked event of hostport ("host:port") refused
// for reason; its task, attempt and clone are the caller's to set.
func BlockedEvent(hostport, reason string) Event {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return Event{Type: EvBlocked, Host: hostport, Reason: reason}
	}
	n, _ := strconv.Atoi(port)
	return Event{Type: EvBlocked, Host: host, Port: n, Reason: reason}
}

// BlockedText says what a Blocked event refused, for people: "host:port
// refused (why)". The host and the reason are untrusted text.
func (e *Event) BlockedText() string {
	text := e.BlockedHost() + " refused"
	if e.Reason != "" {
		text += " (" + e.Reason + ")"
	}
	return text
}

// BlockedIn returns the hosts ("host:port") of the Blocked events of the
// task's attempt in evs, each once, in order: what a gate or setup step
// that failed may have failed for (an environment error, not the task's).
func BlockedIn(evs []*Event, task TaskID, attempt int) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range evs {
		if e.Type != EvBlocked || e.Task != task || e.Attempt != attempt {
			continue
		}
		h := e.BlockedHost()
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// BlockedReason is the sentence for a gate or setup step that failed
// after muster refused it the hosts: an environment error naming the
// hosts and the allow_hosts key that lets them through.
func BlockedReason(step string, hosts []string, key string) string {
	return step + " failed after muster refused it the network (" + strings.Join(hosts, ", ") +
		"): not charged; add the host to " + key + " allow_hosts if it needs it"
}

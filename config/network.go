package config

import (
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/muster-run/muster"
)

// network reads a network policy value.
func (r *reader) network(v any, p []string) muster.NetworkPolicy {
	return muster.NetworkPolicy(r.oneOf(v, p, muster.NetworkPolicies...))
}

// allowHosts reads allow_hosts: "host", "host:port", "ADDRESS" or
// "[IPV6]:port", without a scheme, a path or user-info.
func (r *reader) allowHosts(v any, p []string) []string {
	var out []string
	for _, s := range r.strings(v, p) {
		if !validHostEntry(s) {
			r.at(p, `allow_hosts: %q: want a host name or address, with a port if only one ("registry.example.org", "127.0.0.1:8080", "[::1]:9000")`, s)
			continue
		}
		out = append(out, strings.ToLower(s))
	}
	return out
}

// validHostEntry reports whether s is "host", "host:port" or an address.
func validHostEntry(s string) bool {
	if s == "" || strings.ContainsAny(s, "/@ \t?#") {
		return false
	}
	if net.ParseIP(s) != nil {
		return true
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return false
	}
	if net.ParseIP(host) != nil {
		return true
	}
	host = strings.TrimPrefix(host, "*.")
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" {
			return false
		}
	}
	return true
}

// ports reads host_ports: a list of TCP ports.
func (r *reader) ports(v any, p []string) []int {
	a, ok := v.([]any)
	if !ok {
		r.at(p, "host_ports: want a list of ports, such as [5432]")
		return nil
	}
	var out []int
	for _, x := range a {
		n, ok := x.(int64)
		if !ok || n < 1 || n > math.MaxUint16 {
			r.at(p, "host_ports: want a list of ports from 1 to 65535, such as [5432]")
			return nil
		}
		out = append(out, int(n))
	}
	return out
}

// netKey reads one key of a [gates] or [setup] network table; it reports
// whether k is one.
func (r *reader) netKey(n *muster.Network, k string, v any, p []string, withPorts bool) bool {
	switch {
	case k == "network":
		n.Policy = r.network(v, p)
	case k == "allow_hosts":
		n.AllowHosts = r.allowHosts(v, p)
	case k == "host_ports" && withPorts:
		n.HostPorts = r.ports(v, p)
	default:
		return false
	}
	return true
}

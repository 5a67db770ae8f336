package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
)

// refusedError is a host the proxy's policy does not let through.
type refusedError struct{ why string }

func (e *refusedError) Error() string { return e.why }

// guardDialer dials for the proxy: only hosts the policy allows, each
// resolved here (the address dialled is the one checked), and never a
// loopback, link-local, private or unique-local address unless
// allow_hosts names it literally.
type guardDialer struct {
	net      muster.Network
	resolver *net.Resolver
	refuse   func(hostport, why string)

	mu    sync.Mutex
	conns map[net.Conn]bool // tunnels open, closed with the server
}

// DialContext dials addr ("host:port") when the policy allows it.
func (d *guardDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, _ := strconv.Atoi(portStr)
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if d.hostPort(host, port) {
		var dl net.Dialer
		return dl.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", portStr))
	}
	if why := d.hostRefused(host, port); why != "" {
		d.refuse(addr, why)
		return nil, &refusedError{why}
	}
	ips, err := d.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	why := ""
	for _, ip := range ips {
		if inner(ip) && !d.literal(ip, port) {
			why = ip.String() + " is a " + kindOf(ip) + " address; allow_hosts must name it literally"
			continue
		}
		var dl net.Dialer
		c, err := dl.DialContext(ctx, network, net.JoinHostPort(ip.String(), portStr))
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	if why == "" {
		why = "no address"
	}
	d.refuse(addr, why)
	return nil, &refusedError{why}
}

func (d *guardDialer) lookup(ctx context.Context, host string) ([]net.IP, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}, nil
	}
	r := d.resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	out := make([]net.IP, len(addrs))
	for i, a := range addrs {
		out[i] = a.IP
	}
	return out, nil
}

// hostPort reports whether host:port is a loopback port of the host that
// [gates] host_ports opens, whatever the policy.
func (d *guardDialer) hostPort(host string, port int) bool {
	if host != "localhost" && host != "127.0.0.1" {
		return false
	}
	for _, p := range d.net.HostPorts {
		if p == port {
			return true
		}
	}
	return false
}

// hostRefused says why the policy refuses host:port ("" when it allows
// it, before its addresses are checked).
func (d *guardDialer) hostRefused(host string, port int) string {
	switch d.net.Policy {
	case muster.NetOpen:
		return ""
	case muster.NetAllowlist:
		for _, e := range d.net.AllowHosts {
			if entryMatches(e, host, port) {
				return ""
			}
		}
		return "not in allow_hosts"
	}
	pol := d.net.Policy
	if pol == "" {
		pol = muster.NetProvider
	}
	return "network " + string(pol) + " allows no host but the provider"
}

// entryMatches reports whether an allow_hosts entry names host:port:
// "host" (any port), "host:port", "*.domain" (its subdomains), or an
// address written either way.
func entryMatches(entry, host string, port int) bool {
	eh, ep := entry, 0
	if h, p, err := net.SplitHostPort(entry); err == nil {
		eh, ep = h, atoi(p)
	}
	eh = strings.ToLower(strings.Trim(eh, "[]"))
	if ep != 0 && ep != port {
		return false
	}
	if ip := net.ParseIP(eh); ip != nil {
		hip := net.ParseIP(host)
		return hip != nil && ip.Equal(hip)
	}
	if suffix, ok := strings.CutPrefix(eh, "*."); ok {
		return strings.HasSuffix(host, "."+suffix)
	}
	return eh == host
}

// literal reports whether allow_hosts names ip itself (with port, or
// with none).
func (d *guardDialer) literal(ip net.IP, port int) bool {
	for _, e := range d.net.AllowHosts {
		eh, ep := e, 0
		if h, p, err := net.SplitHostPort(e); err == nil {
			eh, ep = h, atoi(p)
		}
		if x := net.ParseIP(strings.Trim(eh, "[]")); x != nil && x.Equal(ip) && (ep == 0 || ep == port) {
			return true
		}
	}
	return false
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

var cgnat = &net.IPNet{IP: net.IPv4(100, 64, 0, 0), Mask: net.CIDRMask(10, 32)}

// inner reports whether ip is an address of this machine or its networks:
// loopback, link-local (cloud metadata), private, unique-local, shared
// (CGNAT), unspecified or multicast.
func inner(ip net.IP) bool {
	return ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsPrivate() ||
		ip.IsUnspecified() || ip.IsMulticast() || cgnat.Contains(ip) || (ip.To4() != nil && ip.To4()[0] == 0)
}

func kindOf(ip net.IP) string {
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsPrivate() && ip.To4() == nil:
		return "unique-local"
	case ip.IsPrivate(), cgnat.Contains(ip):
		return "private"
	}
	return "reserved"
}

// connect opens a tunnel (CONNECT host:port) when the policy allows it.
func (s *Server) connect(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	up, err := s.dialer.DialContext(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		proxyError(w, r, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		writeError(w, http.StatusInternalServerError, "muster: cannot tunnel")
		return
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	s.dialer.track(down, up)
	_, _ = down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.dialer.untrack(down, up)
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, rw); done <- struct{}{} }()
		go func() { _, _ = io.Copy(down, up); done <- struct{}{} }()
		<-done
		down.Close()
		up.Close()
		<-done
	}()
}

// proxyPlain forwards a plain HTTP request (absolute URL) when the
// policy allows its host.
func (s *Server) proxyPlain(w http.ResponseWriter, r *http.Request) {
	if r.URL.Scheme != "http" {
		writeError(w, http.StatusBadRequest, "muster: the proxy forwards http:// URLs; https goes through CONNECT")
		return
	}
	if r.URL.Port() == "" {
		r.URL.Host = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	r.Header.Del("Proxy-Authorization")
	r.Header.Del("Proxy-Connection")
	s.plain.ServeHTTP(w, r)
}

func (d *guardDialer) track(cs ...net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conns == nil {
		d.conns = map[net.Conn]bool{}
	}
	for _, c := range cs {
		d.conns[c] = true
	}
}

func (d *guardDialer) untrack(cs ...net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range cs {
		delete(d.conns, c)
	}
}

// closeAll ends every open tunnel.
func (d *guardDialer) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for c := range d.conns {
		c.Close()
	}
}

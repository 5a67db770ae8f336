package egress

import (
	"net"
	"strconv"
	"sync"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/agentkit"
)

// Open is the muster.NetOpener of gates and setup steps: muster's proxy
// with the step's policy, on a listener of its own (the host's loopback
// where there is no network namespace), and no model endpoint.
func Open(n muster.Network) (*muster.NetSession, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var hosts []string
	srv := New(Options{Network: n, Report: func(r muster.Record) {
		if r.Type != muster.RecBlocked {
			return
		}
		mu.Lock()
		hosts = append(hosts, net.JoinHostPort(r.Host, strconv.Itoa(r.Port)))
		mu.Unlock()
	}})
	srv.Serve(ln)
	return &muster.NetSession{
		Env:    agentkit.EndpointVars(&muster.ModelEndpoint{Proxy: srv.URL()}),
		Bridge: &muster.Bridge{Port: ln.Addr().(*net.TCPAddr).Port, Serve: srv.Serve},
		Close: func() []string {
			_ = srv.Close()
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), hosts...)
		},
	}, nil
}

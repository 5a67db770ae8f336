package fleet

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/muster-run/muster"
)

// ServeOptions configure an embedded server.
type ServeOptions struct {
	// Listen is HOST:PORT (port 0: any free port).
	Listen string
	// Store is JetStream's directory.
	Store string
	// Users are admitted by user name and password; Nkeys by public nkey.
	Users map[string]string
	Nkeys []string
	// TLSCert and TLSKey make the server speak TLS; with TLSCA, clients
	// must present a certificate signed by it.
	TLSCert, TLSKey, TLSCA string

	// lazySync runs JetStream with its default sync (benchmarks only).
	lazySync bool
}

// Server is an embedded NATS server with JetStream.
type Server struct {
	ns *server.Server
}

// Serve starts a server and waits until it takes connections. Serving
// beyond loopback without credentials is refused: any host that can
// reach the port could otherwise take tasks and read code.
func Serve(o ServeOptions) (*Server, error) {
	host, portS, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("--listen %q: want HOST:PORT, such as 127.0.0.1:4222", o.Listen)}
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port < 0 || port > 65535 {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("--listen %q: bad port", o.Listen)}
	}
	if !loopback(host) && len(o.Users) == 0 && len(o.Nkeys) == 0 {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("--listen %s is not a loopback address: set credentials first (%s and %s, or [fleet] nkeys), see docs/fleet.md", o.Listen, EnvUser, EnvPassword)}
	}
	if err := os.MkdirAll(o.Store, 0o700); err != nil {
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("store %s: %v", o.Store, err)}
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName: "muster-fleet", Host: host, Port: port,
		JetStream: true, StoreDir: o.Store, NoSigs: true, NoLog: true,
		MaxPayload: 8 << 20,
		// Every write reaches the disk before it is acknowledged: with
		// the default (a sync every two minutes) a power failure loses
		// messages JetStream already acknowledged (docs/fleet.md).
		SyncAlways: !o.lazySync,
	}
	for u, p := range o.Users {
		opts.Users = append(opts.Users, &server.User{Username: u, Password: p})
	}
	for _, k := range o.Nkeys {
		opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: k})
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: o.TLSCert, KeyFile: o.TLSKey, CaFile: o.TLSCA, Verify: o.TLSCA != ""})
		if err != nil {
			return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("TLS: %v", err)}
		}
		opts.TLS, opts.TLSConfig, opts.TLSVerify = true, tc, o.TLSCA != ""
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("fleet server: %v", err)}
	}
	go ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		ns.Shutdown()
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet server on %s did not start (is the port in use?)", o.Listen)}
	}
	return &Server{ns: ns}, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SyncAlways reports whether the running server's JetStream syncs
// every write to disk before it acknowledges it.
func (s *Server) SyncAlways() bool {
	c := s.ns.JetStreamConfig()
	return c != nil && c.SyncAlways
}

// URL is the address clients dial.
func (s *Server) URL() string { return s.ns.ClientURL() }

// Close shuts the server down and waits for it.
func (s *Server) Close() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/muster-run/muster"
)

// ServeOptions configure an embedded server.
type ServeOptions struct {
	// Listen is HOST:PORT (port 0: any free port).
	Listen string
	// Store is the server's directory: JetStream's data and the fleet's
	// keys (keys/, created on first use).
	Store string
	// TLSCert and TLSKey make the server speak TLS; with TLSCA, clients
	// must present a certificate signed by it.
	TLSCert, TLSKey, TLSCA string

	// lazySync runs JetStream with its default sync (benchmarks only).
	lazySync bool
}

// Server is an embedded NATS server with JetStream, in operator mode:
// only holders of user JWTs its account signed connect.
type Server struct {
	ns   *server.Server
	keys *Keys
	res  *server.MemAccResolver
	// self is fleet serve's own client (it makes the streams and answers
	// InfoSubject).
	self    *nats.Conn
	stop    chan struct{}
	stopped chan struct{}
	store   string
}

// InfoSubject answers with the server's ServerInfo (fleet serve only).
const InfoSubject = "muster.server.info"

// ServerInfo is what fleet serve says of itself.
type ServerInfo struct {
	SyncAlways bool `json:"sync_always"`
}

// Serve starts a server and waits until it takes connections.
func Serve(o ServeOptions) (*Server, error) {
	host, portS, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("--listen %q: want HOST:PORT, such as 127.0.0.1:4222", o.Listen)}
	}
	port, err := strconv.Atoi(portS)
	if err != nil || port < 0 || port > 65535 {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("--listen %q: bad port", o.Listen)}
	}
	if err := os.MkdirAll(o.Store, 0o700); err != nil {
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("store %s: %v", o.Store, err)}
	}
	keys, err := OpenKeys(o.Store, true)
	if err != nil {
		return nil, err
	}
	oc, err := jwt.DecodeOperatorClaims(keys.OperatorJWT)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: operator.jwt: %v", err)}
	}
	res := &server.MemAccResolver{}
	_ = res.Store(keys.AccountPub, keys.AccountJWT)
	_ = res.Store(keys.SystemPub, keys.SystemJWT)
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
		SyncAlways:       !o.lazySync,
		TrustedOperators: []*jwt.OperatorClaims{oc},
		AccountResolver:  res,
		SystemAccount:    keys.SystemPub,
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
	s := &Server{ns: ns, keys: keys, res: res, store: o.Store, stop: make(chan struct{}), stopped: make(chan struct{})}
	if err := s.startSelf(); err != nil {
		ns.Shutdown()
		return nil, err
	}
	go s.watchAccount(keys.AccountJWT, keys.AccountPub, keys.OperatorPub) // until Close
	return s, nil
}

// startSelf connects fleet serve's own client (in process, with a
// credential that is never written), makes the fleet's streams and
// buckets, and answers InfoSubject.
func (s *Server) startSelf() error {
	creds, err := s.keys.issue("fleet-serve", UserOptions{Orchestrator: true}, false)
	if err != nil {
		return err
	}
	tok, _ := jwt.ParseDecoratedJWT(creds)
	kp, err := jwt.ParseDecoratedNKey(creds)
	if err != nil {
		return err
	}
	nc, err := nats.Connect("", nats.InProcessServer(s.ns), nats.Name("muster fleet serve"),
		nats.UserJWT(func() (string, error) { return tok, nil }, func(n []byte) ([]byte, error) { return kp.Sign(n) }))
	if err != nil {
		return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet serve's own client: %v", err)}
	}
	c := &Conn{NC: nc}
	if err := c.bind(context.Background(), true); err != nil {
		nc.Close()
		return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet serve: streams: %v", err)}
	}
	info, _ := json.Marshal(ServerInfo{SyncAlways: s.SyncAlways()})
	if _, err := nc.Subscribe(InfoSubject, func(m *nats.Msg) { _ = m.Respond(info) }); err != nil {
		nc.Close()
		return err
	}
	s.self = nc
	return nil
}

// watchAccount loads the account JWT again when muster fleet
// credentials --revoke rewrote it: the revoked users are disconnected.
func (s *Server) watchAccount(initial, account, operator string) {
	defer close(s.stopped)
	path := filepath.Join(s.store, KeysDir, "account.jwt")
	last := []byte(initial)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		b, err := os.ReadFile(path)
		if err != nil || bytes.Equal(bytes.TrimSpace(b), last) {
			continue
		}
		ac, err := jwt.DecodeAccountClaims(string(bytes.TrimSpace(b)))
		if err != nil || ac.Subject != account || ac.Issuer != operator {
			continue // half written, or not this fleet's account
		}
		last = bytes.TrimSpace(b)
		_ = s.res.Store(ac.Subject, string(last))
		if acc, err := s.ns.LookupAccount(ac.Subject); err == nil {
			s.ns.UpdateAccountClaims(acc, ac)
		}
	}
}

// SyncAlways reports whether the running server's JetStream syncs
// every write to disk before it acknowledges it.
func (s *Server) SyncAlways() bool {
	c := s.ns.JetStreamConfig()
	return c != nil && c.SyncAlways
}

// Keys are the server's operator and account keys.
func (s *Server) Keys() *Keys { return s.keys }

// URL is the address clients dial.
func (s *Server) URL() string { return s.ns.ClientURL() }

// Close shuts the server down and waits for it.
func (s *Server) Close() {
	close(s.stop)
	<-s.stopped
	if s.self != nil {
		s.self.Close()
	}
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

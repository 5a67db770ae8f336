package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/muster-run/muster"
)

// Names of the fleet's streams and buckets.
const (
	TasksStream   = "MUSTER_TASKS"
	EventsStream  = "MUSTER_EVENTS"
	WorkersBucket = "muster_workers"
	LeasesBucket  = "muster_leases"
	BundlesBucket = "muster_bundles"
	RunsBucket    = "muster_runs"
)

// Environment variables with the credentials file and TLS files (never
// on argv).
const (
	EnvCreds = "MUSTER_NATS_CREDS" // path of a .creds file
	EnvCA    = "MUSTER_NATS_CA"
	EnvCert  = "MUSTER_NATS_CERT"
	EnvKey   = "MUSTER_NATS_KEY"
)

// CheckOldEnv refuses the variables of the shared user, password and
// nkey of earlier versions: each member of a fleet holds credentials of
// its own now.
func CheckOldEnv() error {
	for _, v := range []string{"MUSTER_NATS_USER", "MUSTER_NATS_PASSWORD", "MUSTER_NATS_NKEY_SEED"} {
		if os.Getenv(v) != "" {
			return &muster.Error{Code: muster.CodeInvalid, Message: v + " is set: a fleet no longer shares a user, a password or nkeys; issue each host its own credentials with muster fleet credentials NAME --store DIR -o FILE and pass --creds FILE (docs/fleet.md)"}
		}
	}
	return nil
}

// Auth is how to authenticate to the server (a .creds file), and how to
// check it (TLS).
type Auth struct {
	Creds         string
	CA, Cert, Key string
}

// AuthFrom reads the credentials file and the TLS files from the [fleet]
// table and the environment; the environment wins, and a --creds flag
// (creds, when not empty) wins over both. Relative file names in the
// config are taken from the config file's directory.
func AuthFrom(cfg *muster.Config, creds string) Auth {
	var a Auth
	dir := ""
	if cfg != nil {
		fc := cfg.Fleet
		if cfg.Source != "" {
			dir = filepath.Dir(cfg.Source)
		}
		a.Creds = rel(dir, fc.Creds)
		a.CA, a.Cert, a.Key = rel(dir, fc.TLSCA), rel(dir, fc.TLSCert), rel(dir, fc.TLSKey)
	}
	for _, e := range []struct {
		name string
		to   *string
	}{{EnvCreds, &a.Creds}, {EnvCA, &a.CA}, {EnvCert, &a.Cert}, {EnvKey, &a.Key}} {
		if v := os.Getenv(e.name); v != "" {
			*e.to = v
		}
	}
	if creds != "" {
		a.Creds = creds
	}
	return a
}

func rel(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// CheckURL refuses a server URL that carries credentials: they would be
// on argv or in a shared file, where any process or reader sees them.
func CheckURL(raw string) error {
	if raw == "" {
		return &muster.Error{Code: muster.CodeInvalid, Message: "no NATS URL: pass --nats URL or set [fleet] nats in muster.toml"}
	}
	for _, one := range strings.Split(raw, ",") {
		u, err := url.Parse(strings.TrimSpace(one))
		if err != nil || u.Host == "" {
			return &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("NATS URL %q: want nats://HOST:PORT (or tls://HOST:PORT)", one)}
		}
		if u.User != nil {
			return &muster.Error{Code: muster.CodeInvalid, Message: "NATS URL: no credentials in the URL (they would show on the command line): pass --creds FILE (muster fleet credentials issues one)"}
		}
	}
	return nil
}

// Conn is a connection to the fleet's server with its JetStream
// resources, created on first use (by whichever side comes first).
type Conn struct {
	NC      *nats.Conn
	JS      jetstream.JetStream
	Workers jetstream.KeyValue
	Leases  jetstream.KeyValue
	Bundles jetstream.ObjectStore
	// Runs holds one key per run whose orchestrator is alive.
	Runs jetstream.KeyValue
	// self is what the credentials this connection holds say (nil on
	// fleet serve's own connection).
	self *Identity
}

// WorkerTTL is how long a registration lives without a heartbeat;
// PresenceTTL how long a run's presence lives without its orchestrator's
// refresh (workers keep its jobs for the run's run_ttl past that).
const (
	WorkerTTL   = 15 * time.Second
	PresenceTTL = 15 * time.Second
)

// Connect dials the server at url with the credentials of a and binds
// the fleet's streams and buckets; create makes them when they are
// missing (an orchestrator does; a worker may not). name identifies the
// client in the server's monitoring.
func Connect(ctx context.Context, rawURL, name string, a Auth, create bool) (*Conn, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	if err := CheckOldEnv(); err != nil {
		return nil, err
	}
	if a.Creds == "" {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: "no fleet credentials: pass --creds FILE or set [fleet] creds (issue them with muster fleet credentials NAME --store DIR -o FILE, see docs/fleet.md)"}
	}
	id, err := ReadIdentity(a.Creds)
	if err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Name(name), nats.Timeout(5 * time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond),
		nats.UserCredentials(a.Creds)}
	if !id.Orchestrator {
		opts = append(opts, nats.CustomInboxPrefix(InboxPrefix(id.Name)))
	}
	if a.CA != "" {
		opts = append(opts, nats.RootCAs(a.CA))
	}
	if a.Cert != "" || a.Key != "" {
		opts = append(opts, nats.ClientCert(a.Cert, a.Key))
	}
	nc, err := nats.Connect(rawURL, opts...)
	if err != nil {
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(err.Error(), "Authorization Violation") {
			err = fmt.Errorf("%w (are the credentials %s this fleet's, and not revoked?)", err, a.Creds)
		}
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("connect to the fleet at %s: %v", rawURL, err)}
	}
	c := &Conn{NC: nc, self: id}
	if err := c.bind(ctx, create); err != nil {
		nc.Close()
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet at %s: %v (is JetStream enabled on the server? an orchestrator or muster fleet serve makes the fleet's streams)", rawURL, err)}
	}
	return c, nil
}

var (
	tasksConfig = jetstream.StreamConfig{
		Name: TasksStream, Subjects: []string{"muster.task.>"}, Retention: jetstream.WorkQueuePolicy,
		MaxAge: 7 * 24 * time.Hour, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
	}
	eventsConfig = jetstream.StreamConfig{
		Name: EventsStream, Subjects: []string{"muster.ev.>"}, Retention: jetstream.LimitsPolicy,
		MaxAge: 7 * 24 * time.Hour, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute,
	}
)

func (c *Conn) bind(ctx context.Context, create bool) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	js, err := jetstream.New(c.NC)
	if err != nil {
		return err
	}
	c.JS = js
	kv := func(cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
		if create {
			return js.CreateOrUpdateKeyValue(ctx, cfg)
		}
		return js.KeyValue(ctx, cfg.Bucket)
	}
	for _, sc := range []jetstream.StreamConfig{tasksConfig, eventsConfig} {
		if create {
			_, err = js.CreateOrUpdateStream(ctx, sc)
		} else {
			_, err = js.Stream(ctx, sc.Name)
		}
		if err != nil {
			return fmt.Errorf("stream %s: %w", sc.Name, err)
		}
	}
	if c.Workers, err = kv(jetstream.KeyValueConfig{Bucket: WorkersBucket, TTL: WorkerTTL, History: 1}); err != nil {
		return fmt.Errorf("bucket %s: %w", WorkersBucket, err)
	}
	if c.Leases, err = kv(jetstream.KeyValueConfig{Bucket: LeasesBucket, TTL: 7 * 24 * time.Hour, History: 1}); err != nil {
		return fmt.Errorf("bucket %s: %w", LeasesBucket, err)
	}
	if c.Runs, err = kv(jetstream.KeyValueConfig{Bucket: RunsBucket, TTL: PresenceTTL, History: 1}); err != nil {
		return fmt.Errorf("bucket %s: %w", RunsBucket, err)
	}
	oc := jetstream.ObjectStoreConfig{Bucket: BundlesBucket, TTL: 7 * 24 * time.Hour}
	if create {
		c.Bundles, err = js.CreateOrUpdateObjectStore(ctx, oc)
	} else {
		c.Bundles, err = js.ObjectStore(ctx, oc.Bucket)
	}
	if err != nil {
		return fmt.Errorf("bucket %s: %w", BundlesBucket, err)
	}
	return nil
}

// Info asks fleet serve what it says of itself; ok is false when no one
// answers (another NATS server).
func (c *Conn) Info(ctx context.Context) (ServerInfo, bool) {
	var si ServerInfo
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := c.NC.RequestWithContext(ctx, InfoSubject, nil)
	if err != nil || json.Unmarshal(m.Data, &si) != nil {
		return si, false
	}
	return si, true
}

// Close drains the connection.
func (c *Conn) Close() {
	if c != nil && c.NC != nil {
		_ = c.NC.Drain()
	}
}

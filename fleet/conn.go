package fleet

import (
	"context"
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

// Environment variables with the credentials (never on argv).
const (
	EnvUser     = "MUSTER_NATS_USER"
	EnvPassword = "MUSTER_NATS_PASSWORD"
	EnvNkeySeed = "MUSTER_NATS_NKEY_SEED" // path of an nkey seed file
	EnvCA       = "MUSTER_NATS_CA"
	EnvCert     = "MUSTER_NATS_CERT"
	EnvKey      = "MUSTER_NATS_KEY"
)

// Auth is how to authenticate to the server, and how to check it (TLS).
type Auth struct {
	User, Password string
	NkeySeedFile   string
	CA, Cert, Key  string
}

// AuthFrom reads the credentials from the [fleet] table and the
// environment; the environment wins. Relative file names in the config
// are taken from the config file's directory.
func AuthFrom(cfg *muster.Config) Auth {
	var a Auth
	dir := ""
	if cfg != nil {
		fc := cfg.Fleet
		if cfg.Source != "" {
			dir = filepath.Dir(cfg.Source)
		}
		a.User = fc.User
		if fc.PasswordEnv != "" {
			a.Password = os.Getenv(fc.PasswordEnv)
		}
		a.NkeySeedFile = rel(dir, fc.NkeySeedFile)
		a.CA, a.Cert, a.Key = rel(dir, fc.TLSCA), rel(dir, fc.TLSCert), rel(dir, fc.TLSKey)
	}
	for _, e := range []struct {
		name string
		to   *string
	}{{EnvUser, &a.User}, {EnvPassword, &a.Password}, {EnvNkeySeed, &a.NkeySeedFile}, {EnvCA, &a.CA}, {EnvCert, &a.Cert}, {EnvKey, &a.Key}} {
		if v := os.Getenv(e.name); v != "" {
			*e.to = v
		}
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
			return &muster.Error{Code: muster.CodeInvalid, Message: "NATS URL: no credentials in the URL (they would show on the command line): set " + EnvUser + " and " + EnvPassword + ", or " + EnvNkeySeed}
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
}

// WorkerTTL is how long a registration lives without a heartbeat;
// RunTTL how long a run's presence lives without its orchestrator's.
const (
	WorkerTTL = 15 * time.Second
	RunTTL    = 15 * time.Second
)

// Connect dials the server at url and makes sure the fleet's streams and
// buckets exist. name identifies the client in the server's monitoring.
func Connect(ctx context.Context, rawURL, name string, a Auth) (*Conn, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Name(name), nats.Timeout(5 * time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond)}
	if a.User != "" {
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	}
	if a.NkeySeedFile != "" {
		o, err := nats.NkeyOptionFromSeed(a.NkeySeedFile)
		if err != nil {
			return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("nkey seed %s: %v", a.NkeySeedFile, err)}
		}
		opts = append(opts, o)
	}
	if a.CA != "" {
		opts = append(opts, nats.RootCAs(a.CA))
	}
	if a.Cert != "" || a.Key != "" {
		opts = append(opts, nats.ClientCert(a.Cert, a.Key))
	}
	nc, err := nats.Connect(rawURL, opts...)
	if err != nil {
		code := muster.CodeInternal
		if errors.Is(err, nats.ErrAuthorization) || strings.Contains(err.Error(), "Authorization Violation") {
			err = fmt.Errorf("%w (check %s/%s or %s)", err, EnvUser, EnvPassword, EnvNkeySeed)
		}
		return nil, &muster.Error{Code: code, Message: fmt.Sprintf("connect to the fleet at %s: %v", rawURL, err)}
	}
	c := &Conn{NC: nc}
	if err := c.setUp(ctx); err != nil {
		nc.Close()
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet at %s: %v (is JetStream enabled on the server?)", rawURL, err)}
	}
	return c, nil
}

func (c *Conn) setUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	js, err := jetstream.New(c.NC)
	if err != nil {
		return err
	}
	c.JS = js
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: TasksStream, Subjects: []string{"muster.task.>"}, Retention: jetstream.WorkQueuePolicy,
		MaxAge: 7 * 24 * time.Hour, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
	}); err != nil {
		return fmt.Errorf("stream %s: %w", TasksStream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: EventsStream, Subjects: []string{"muster.ev.>"}, Retention: jetstream.LimitsPolicy,
		MaxAge: 7 * 24 * time.Hour, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute,
	}); err != nil {
		return fmt.Errorf("stream %s: %w", EventsStream, err)
	}
	if c.Workers, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: WorkersBucket, TTL: WorkerTTL, History: 1}); err != nil {
		return fmt.Errorf("bucket %s: %w", WorkersBucket, err)
	}
	if c.Leases, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: LeasesBucket, TTL: 7 * 24 * time.Hour, History: 1}); err != nil {
		return fmt.Errorf("bucket %s: %w", LeasesBucket, err)
	}
	if c.Runs, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: RunsBucket, TTL: RunTTL, History: 1}); err != nil {
		return fmt.Errorf("bucket %s: %w", RunsBucket, err)
	}
	if c.Bundles, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: BundlesBucket, TTL: 7 * 24 * time.Hour}); err != nil {
		return fmt.Errorf("bucket %s: %w", BundlesBucket, err)
	}
	return nil
}

// Close drains the connection.
func (c *Conn) Close() {
	if c != nil && c.NC != nil {
		_ = c.NC.Drain()
	}
}

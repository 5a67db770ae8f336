package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/fsync"
)

// The fleet's identities are NATS's decentralized JWTs: fleet serve
// keeps an operator and one account (their seeds in the store's keys/
// directory, mode 0600), and every client holds a user JWT the account
// signed, whose permissions say what it may publish and subscribe to.
// The server needs no list of users: a worker added later connects
// without a restart.

// KeysDir is the directory of the store that holds the fleet's keys.
const KeysDir = "keys"

// Tags in a user JWT (tags are lowercased by the JWT library: executor
// names are carried as their subject tokens).
const (
	tagOrchestrator = "muster:orchestrator"
	tagWorker       = "muster:worker"
	tagExecutor     = "muster-exec:"
)

// NamePattern is what a worker's name may hold: one subject token
// (compiled on first use).
var NamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`) })

// Keys are the operator's and the account's keys and JWTs.
type Keys struct {
	dir                     string
	Operator, Account       nkeys.KeyPair
	OperatorJWT, AccountJWT string
	OperatorPub, AccountPub string
	// SystemJWT and SystemPub are the server's system account (no user
	// is ever issued in it).
	SystemJWT, SystemPub string
	// Users maps a credential's name to the public keys of the users
	// issued under it.
	Users map[string][]string
}

// OpenKeys reads the keys in store/keys; create makes them (an operator
// and a JetStream-enabled account) when there are none.
func OpenKeys(store string, create bool) (*Keys, error) {
	k := &Keys{dir: filepath.Join(store, KeysDir), Users: map[string][]string{}}
	seed, err := os.ReadFile(filepath.Join(k.dir, "operator.nk"))
	if errors.Is(err, os.ErrNotExist) {
		if !create {
			return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("no fleet keys in %s: run muster fleet serve --store %s once (it creates them)", k.dir, store)}
		}
		return k, k.create()
	}
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: %v", err)}
	}
	if k.Operator, err = nkeys.FromSeed(seed); err != nil {
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: operator.nk: %v", err)}
	}
	seed, err = os.ReadFile(filepath.Join(k.dir, "account.nk"))
	if err == nil {
		k.Account, err = nkeys.FromSeed(seed)
	}
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: account.nk: %v", err)}
	}
	k.OperatorPub, _ = k.Operator.PublicKey()
	k.AccountPub, _ = k.Account.PublicKey()
	for _, f := range []struct {
		name string
		to   *string
	}{{"operator.jwt", &k.OperatorJWT}, {"account.jwt", &k.AccountJWT}, {"system.jwt", &k.SystemJWT}} {
		b, err := os.ReadFile(filepath.Join(k.dir, f.name))
		if err != nil {
			return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: %v", err)}
		}
		*f.to = strings.TrimSpace(string(b))
	}
	if sc, err := jwt.DecodeAccountClaims(k.SystemJWT); err == nil {
		k.SystemPub = sc.Subject
	}
	if b, err := os.ReadFile(filepath.Join(k.dir, "users.json")); err == nil {
		if err := json.Unmarshal(b, &k.Users); err != nil {
			return nil, &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: users.json: %v", err)}
		}
	}
	return k, nil
}

func (k *Keys) create() error {
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: %v", err)}
	}
	var err error
	if k.Operator, err = nkeys.CreateOperator(); err != nil {
		return err
	}
	if k.Account, err = nkeys.CreateAccount(); err != nil {
		return err
	}
	sys, err := nkeys.CreateAccount()
	if err != nil {
		return err
	}
	k.OperatorPub, _ = k.Operator.PublicKey()
	k.AccountPub, _ = k.Account.PublicKey()
	k.SystemPub, _ = sys.PublicKey()
	oc := jwt.NewOperatorClaims(k.OperatorPub)
	oc.Name = "muster-fleet"
	oc.SystemAccount = k.SystemPub
	if k.OperatorJWT, err = oc.Encode(k.Operator); err != nil {
		return err
	}
	sc := jwt.NewAccountClaims(k.SystemPub)
	sc.Name = "SYS"
	if k.SystemJWT, err = sc.Encode(k.Operator); err != nil {
		return err
	}
	ac := jwt.NewAccountClaims(k.AccountPub)
	ac.Name = "muster"
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1, MaxAckPending: -1, MemoryMaxStreamBytes: -1, DiskMaxStreamBytes: -1}
	if k.AccountJWT, err = ac.Encode(k.Operator); err != nil {
		return err
	}
	oseed, _ := k.Operator.Seed()
	aseed, _ := k.Account.Seed()
	// The JWTs first, the seeds last: a store with operator.nk is whole.
	for _, f := range []struct {
		name string
		data []byte
	}{{"system.jwt", []byte(k.SystemJWT)}, {"account.jwt", []byte(k.AccountJWT)}, {"operator.jwt", []byte(k.OperatorJWT)}, {"account.nk", aseed}, {"operator.nk", oseed}} {
		if err := writeSecret(filepath.Join(k.dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

// writeSecret writes a file only its owner may read, atomically.
func writeSecret(path string, data []byte) error {
	if err := fsync.WriteFile(path, data, 0o600); err != nil {
		return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("write %s: %v", path, err)}
	}
	return nil
}

// UserOptions say what a credential may do.
type UserOptions struct {
	// Orchestrator may do everything (it runs muster run or resume).
	Orchestrator bool
	// Executors are those a worker may serve.
	Executors []string
}

// Issue makes a user of the account named name and returns its
// credentials in NATS's .creds format (the JWT and the seed).
func (k *Keys) Issue(name string, o UserOptions) ([]byte, error) { return k.issue(name, o, true) }

func (k *Keys) issue(name string, o UserOptions, save bool) ([]byte, error) {
	if !NamePattern().MatchString(name) {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("credential name %q: use letters, digits, '_' and '-' (up to 64)", name)}
	}
	if !o.Orchestrator && len(o.Executors) == 0 {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: "a worker's credentials name the executors it may serve: pass --executor NAME (repeatable), or --orchestrator"}
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	if o.Orchestrator {
		uc.Tags.Add(tagOrchestrator)
		uc.Permissions = orchestratorPermissions()
	} else {
		uc.Tags.Add(tagWorker)
		for _, e := range o.Executors {
			uc.Tags.Add(tagExecutor + token(e))
		}
		uc.Permissions = workerPermissions(name, o.Executors)
	}
	tok, err := uc.Encode(k.Account)
	if err != nil {
		return nil, fmt.Errorf("sign the user: %w", err)
	}
	seed, _ := user.Seed()
	creds, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		return nil, err
	}
	if !save {
		return creds, nil
	}
	return creds, k.locked(func() error {
		k.Users[name] = append(k.Users[name], pub)
		return k.saveUsers()
	})
}

// locked runs fn under the store's lock, with the users and the account
// JWT read afresh: two muster fleet credentials at once lose no user and
// no revocation.
func (k *Keys) locked(fn func() error) error {
	f, err := os.OpenFile(filepath.Join(k.dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: %v", err)}
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: lock: %v", err)}
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing unlocks too
	if b, err := os.ReadFile(filepath.Join(k.dir, "users.json")); err == nil {
		users := map[string][]string{}
		if err := json.Unmarshal(b, &users); err != nil {
			return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("fleet keys: users.json: %v", err)}
		}
		k.Users = users
	}
	if b, err := os.ReadFile(filepath.Join(k.dir, "account.jwt")); err == nil {
		k.AccountJWT = strings.TrimSpace(string(b))
	}
	return fn()
}

func (k *Keys) saveUsers() error {
	b, err := json.MarshalIndent(k.Users, "", "  ")
	if err != nil {
		return err
	}
	return writeSecret(filepath.Join(k.dir, "users.json"), b)
}

// Revoke revokes every credential issued under name until now, through
// the account's revocation list; a running fleet serve picks the new
// account JWT up from the store and disconnects its holders.
func (k *Keys) Revoke(name string) error {
	return k.locked(func() error { return k.revoke(name) })
}

func (k *Keys) revoke(name string) error {
	pubs, ok := k.Users[name]
	if !ok {
		names := make([]string, 0, len(k.Users))
		for n := range k.Users {
			names = append(names, n)
		}
		sort.Strings(names)
		return &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("no credentials named %q in %s (issued: %s)", name, k.dir, strings.Join(names, ", "))}
	}
	ac, err := jwt.DecodeAccountClaims(k.AccountJWT)
	if err != nil {
		return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("account.jwt: %v", err)}
	}
	for _, pub := range pubs {
		ac.Revoke(pub)
	}
	if k.AccountJWT, err = ac.Encode(k.Operator); err != nil {
		return err
	}
	return writeSecret(filepath.Join(k.dir, "account.jwt"), []byte(k.AccountJWT))
}

// Identity is what a credentials file says of its holder.
type Identity struct {
	Name         string
	Orchestrator bool
	// Executors are the executors a worker may serve (their subject tokens
	// decoded back).
	Executors []string
	// Worker is set when the credentials are a worker's.
	Worker bool
	// Issuer is the key that signed the user JWT (the fleet's account).
	Issuer string
	// JWT is the user JWT itself: public (a signed claim, not a secret;
	// the seed stays in the file), it goes into a worker's registration
	// so the orchestrator takes only the executors it names.
	JWT string
}

// ReadIdentity decodes the user JWT of a .creds file (it does not check
// the signature: the server does).
func ReadIdentity(path string) (*Identity, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("credentials %s: %v (issue them with muster fleet credentials)", path, err)}
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("credentials %s: %v", path, err)}
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("credentials %s: not a NATS user credentials file: %v", path, err)}
	}
	id := identityOf(uc)
	id.JWT = tok
	return id, nil
}

// identityOf is what a user's claims say of its holder.
func identityOf(uc *jwt.UserClaims) *Identity {
	id := &Identity{Name: uc.Name, Issuer: uc.Issuer}
	if uc.IssuerAccount != "" {
		id.Issuer = uc.IssuerAccount
	}
	for _, t := range uc.Tags {
		switch {
		case t == tagOrchestrator:
			id.Orchestrator = true
		case t == tagWorker:
			id.Worker = true
		case strings.HasPrefix(t, tagExecutor):
			if n, err := tokenEnc.DecodeString(strings.ToUpper(strings.TrimPrefix(t, tagExecutor))); err == nil {
				id.Executors = append(id.Executors, string(n))
			}
		}
	}
	return id
}

// vouchedExecutors are the executors the user JWT tok lets the worker
// whose registration key is name serve, when tok is a worker's, signed
// by account (its signature is checked here), issued to name and not
// expired; ok is false otherwise. A registration is a worker's word: only
// what its credentials say counts (a worker holding credentials for one
// executor that registered another would draw tasks it can never take).
func vouchedExecutors(tok, name, account string) (executors map[string]bool, ok bool) {
	if tok == "" {
		return nil, false
	}
	uc, err := jwt.DecodeUserClaims(tok)
	if err != nil {
		return nil, false
	}
	id := identityOf(uc)
	if id.Issuer != account || id.Name != name || !id.Worker || id.Orchestrator ||
		uc.Expires != 0 && time.Now().Unix() > uc.Expires {
		return nil, false
	}
	executors = map[string]bool{}
	for _, e := range id.Executors {
		executors[e] = true
	}
	return executors, true
}

func orchestratorPermissions() jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add(">")
	p.Sub.Allow.Add(">")
	return p
}

// workerPermissions are a worker's subjects: its own reports (its
// results among them) and registration, the task consumers of its
// executors, reads of the leases, runs and bundles, and nothing that
// creates, changes or deletes a stream or a bucket, or writes an object.
func workerPermissions(name string, executors []string) jwt.Permissions {
	var p jwt.Permissions
	p.Pub.Allow.Add(
		"muster.ev.*."+name+".>",
		"muster.bundle.*",
		"$KV."+WorkersBucket+"."+name,
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO.*",
		"$JS.API.DIRECT.GET.KV_"+LeasesBucket+".>", "$JS.API.STREAM.MSG.GET.KV_"+LeasesBucket,
		"$JS.API.DIRECT.GET.KV_"+RunsBucket+".>", "$JS.API.STREAM.MSG.GET.KV_"+RunsBucket,
		"$JS.API.DIRECT.GET.OBJ_"+BundlesBucket+".>", "$JS.API.STREAM.MSG.GET.OBJ_"+BundlesBucket,
		"$JS.API.CONSUMER.CREATE.OBJ_"+BundlesBucket+".>", "$JS.API.CONSUMER.DELETE.OBJ_"+BundlesBucket+".>",
		"$JS.FC.>",
	)
	for _, e := range executors {
		c := consumerName(e)
		p.Pub.Allow.Add(
			"$JS.API.CONSUMER.CREATE."+TasksStream+"."+c+"."+taskFilter(e),
			"$JS.API.CONSUMER.INFO."+TasksStream+"."+c,
			"$JS.API.CONSUMER.MSG.NEXT."+TasksStream+"."+c,
			"$JS.ACK."+TasksStream+"."+c+".>",
		)
	}
	p.Pub.Deny.Add("$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>")
	// Its own inboxes only: a pull consumer's messages and every answer
	// of the server go to the asker's inbox, so `_INBOX.>` would let a
	// worker read the jobs delivered to others and the orchestrator's
	// answers.
	p.Sub.Allow.Add(InboxPrefix(name) + ".>")
	return p
}

// InboxPrefix is the prefix of a worker's inboxes, the only subjects it
// may subscribe to. "w-" keeps it apart from the default inboxes of an
// orchestrator (_INBOX.<nuid>: no '-' in a nuid).
func InboxPrefix(worker string) string { return "_INBOX.w-" + worker }

package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/suggest"
	"github.com/pelletier/go-toml/v2"
)

// FileName is the config file muster looks for at the repository root.
const FileName = "muster.toml"

// Known keys, in the order of the documentation.
var (
	topKeys      = []string{"run", "executors", "gates", "setup", "pool", "fleet"}
	fleetKeys    = []string{"nats", "creds", "tls_ca", "tls_cert", "tls_key", "lease", "trust_worker_gates", "run_ttl", "join_wait"}
	poolKeys     = []string{"max_clones"}
	runKeys      = []string{"max_parallel", "on_failure", "budget_usd", "budget_tokens", "writers", "on_violation", "noop", "max_rounds", "max_batch", "verify_integration", "approve", "require_approval", "keep", "guard", "grace", "gate_timeout", "reviewers", "stall_timeout", "prices_file", "env_allow", "confine", "writable", "hide", "network", "allow_hosts", "max_file_bytes", "max_tasks", "review_partial", "review_wait", "race", "max_pids", "max_memory"}
	executorKeys = []string{"kind", "clones", "roles", "model", "models", "base_url", "api_key_env", "env", "args", "command", "timeout", "max_concurrent", "env_allow", "writable", "network", "allow_hosts", "seed", "speed"}
)

// namePattern is the shape of an executor or gate name; "#" would break
// slot names ("name#2").
var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })

// envNamePattern is the shape of an environment variable name.
var envNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// Default returns the configuration muster uses when there is no
// muster.toml: the policies' defaults (on_failure "continue",
// on_violation "fail", noop "fail"; zero for every limit, meaning the
// built-in default or no limit) and an empty crew, which the caller fills
// (the CLI uses a sim executor with two coder+reviewer clones unless
// --crew names one).
func Default() *muster.Config {
	return &muster.Config{
		Run: muster.RunConfig{
			OnFailure:   muster.OnFailureContinue,
			OnViolation: muster.OnViolationFail,
			Noop:        muster.NoopFail,
		},
		Executors: []*muster.ExecutorSpec{},
	}
}

// Load reads the config file at path. Problems come back as a
// *muster.Error with code muster.CodeInvalid wrapping muster.Problems
// (each "FILE:LINE: message"); a file that cannot be read is a
// *muster.Error with code muster.CodeInvalid naming the file.
func Load(path string) (*muster.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Op: "read config", Err: err}
	}
	cfg, probs := Parse(path, data)
	if len(probs) > 0 {
		return nil, &muster.Error{Code: muster.CodeInvalid, Err: probs}
	}
	return cfg, nil
}

// Parse reads a muster.toml document; name is the file name used in
// messages. It returns the config (Default() plus what the file sets)
// and every problem found, in line order. It never panics.
func Parse(name string, data []byte) (cfg *muster.Config, probs muster.Problems) {
	r := &reader{file: name}
	cfg = Default()
	cfg.Source = name
	defer func() {
		if x := recover(); x != nil {
			cfg = Default()
			probs = muster.Problems{{File: name, Message: fmt.Sprintf("cannot read the config: %v", x)}}
		}
	}()
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		line := 0
		msg := err.Error()
		if errors.As(err, &de) {
			line, _ = de.Position()
		}
		msg = strings.TrimPrefix(msg, "toml: ")
		r.addf(line, "bad TOML: %s", msg)
		return cfg, r.list
	}
	r.pos = scanPositions(data)
	for _, k := range r.sortedKeys(doc) {
		v := doc[k]
		switch k {
		case "run":
			if t, ok := r.table(v, k); ok {
				r.run(&cfg.Run, t)
			}
		case "executors":
			if t, ok := r.table(v, k); ok {
				cfg.Executors = r.executors(t)
			}
		case "gates":
			if t, ok := r.table(v, k); ok {
				cfg.Gates = r.gates(t, &cfg.GatesNet)
			}
		case "setup":
			if t, ok := r.table(v, k); ok {
				cfg.Setup = r.setup(&cfg.SetupNet, t)
			}
		case "fleet":
			if t, ok := r.table(v, k); ok {
				r.fleet(&cfg.Fleet, t)
			}
		case "pool":
			if t, ok := r.table(v, k); ok {
				r.pool(&cfg.Pool, t)
			}
		default:
			r.unknown(topKeys, k)
		}
	}
	sort.SliceStable(r.list, func(i, j int) bool { return r.list[i].Line < r.list[j].Line })
	return cfg, r.list
}

// pool reads the [pool] table.
func (r *reader) pool(pc *muster.PoolConfig, t map[string]any) {
	for _, k := range r.sortedKeys(t, "pool") {
		v, p := t[k], []string{"pool", k}
		switch k {
		case "max_clones":
			pc.MaxClones = r.count(v, 1, p)
		default:
			r.unknown(poolKeys, p...)
		}
	}
}

// reader collects problems while it walks the decoded document.
type reader struct {
	file string
	pos  positions
	list muster.Problems
}

func (r *reader) addf(line int, format string, args ...any) {
	r.list = append(r.list, muster.Problem{File: r.file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// at reports a problem at the line of the key path.
func (r *reader) at(path []string, format string, args ...any) {
	r.addf(r.pos.line(path...), format, args...)
}

// unknown reports an unknown key with the nearest known one.
func (r *reader) unknown(known []string, path ...string) {
	k := path[len(path)-1]
	where := ""
	if len(path) > 1 {
		where = " in [" + strings.Join(path[:len(path)-1], ".") + "]"
	}
	if s := suggest.Nearest(k, known); s != "" {
		r.at(path, "unknown key %q%s; did you mean %q?", k, where, s)
		return
	}
	r.at(path, "unknown key %q%s (known keys: %s)", k, where, strings.Join(known, ", "))
}

// sortedKeys returns the keys of t in file order (then by name).
func (r *reader) sortedKeys(t map[string]any, prefix ...string) []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		li := r.pos.line(append(append([]string{}, prefix...), keys[i])...)
		lj := r.pos.line(append(append([]string{}, prefix...), keys[j])...)
		if li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	return keys
}

func (r *reader) table(v any, path ...string) (map[string]any, bool) {
	t, ok := v.(map[string]any)
	if !ok {
		r.at(path, "%s: want a table", strings.Join(path, "."))
	}
	return t, ok
}

func (r *reader) run(rc *muster.RunConfig, t map[string]any) {
	for _, k := range r.sortedKeys(t, "run") {
		v, p := t[k], []string{"run", k}
		switch k {
		case "max_parallel":
			rc.MaxParallel = r.count(v, 0, p)
		case "on_failure":
			rc.OnFailure = oneOf(r, v, p, muster.OnFailurePolicies)
		case "budget_usd":
			if f, ok := r.number(v, p); ok {
				rc.BudgetUSDMicros = int64(math.Round(f * 1e6))
				if rc.BudgetUSDMicros > muster.MaxBudgetMicros {
					r.at(p, "budget_usd = %g is more than the cap of %d", f, muster.MaxBudgetMicros/1_000_000)
				}
			}
		case "budget_tokens":
			rc.BudgetTokens = int64(r.count(v, 0, p))
		case "writers":
			rc.Writers = r.count(v, 0, p)
		case "on_violation":
			rc.OnViolation = oneOf(r, v, p, muster.OnViolationPolicies)
		case "noop":
			rc.Noop = oneOf(r, v, p, muster.NoopPolicies)
		case "review_partial":
			rc.ReviewPartial = oneOf(r, v, p, muster.ReviewPartialPolicies)
		case "max_rounds":
			rc.MaxRounds = r.count(v, 1, p)
		case "max_batch":
			rc.MaxBatch = r.count(v, 1, p)
		case "race":
			r.race(rc, v, p)
		case "verify_integration":
			if b, ok := v.(bool); ok {
				rc.VerifyIntegration = &b
			} else {
				r.at(p, "%s: want true or false", k)
			}
		case "approve":
			rc.Approve = r.authorities(v, p)
		case "require_approval":
			rc.RequireApproval = r.authorities(v, p)
		case "keep":
			rc.Keep = r.strings(v, p)
		case "guard":
			rc.Guard = oneOf(r, v, p, muster.GuardPolicies)
		case "grace":
			rc.Grace = r.duration(v, p)
		case "gate_timeout":
			rc.GateTimeout = r.duration(v, p)
		case "reviewers":
			rc.Reviewers = r.count(v, 0, p)
		case "stall_timeout":
			rc.StallTimeout = r.duration(v, p)
		case "review_wait":
			rc.ReviewWait = r.wait(v, p)
		case "prices_file":
			rc.PricesFile = r.str(v, p)
		case "env_allow":
			rc.EnvAllow = r.envNames(v, p)
		case "confine":
			rc.Confine = oneOf(r, v, p, muster.ConfineModes)
		case "writable":
			rc.Writable = r.paths(v, p)
		case "hide":
			rc.Hide = r.paths(v, p)
		case "max_file_bytes", "max_tasks", "max_pids", "max_memory":
			r.runBound(rc, k, v, p)
		case "network":
			rc.Network = r.network(v, p)
		case "allow_hosts":
			rc.AllowHosts = r.allowHosts(v, p)
		default:
			r.unknown(runKeys, p...)
		}
	}
}

// runBound reads one of [run]'s caps on what a run or an invocation may
// take (README "Caps").
func (r *reader) runBound(rc *muster.RunConfig, k string, v any, p []string) {
	switch k {
	case "max_file_bytes":
		if n, ok := v.(int64); ok && n >= 1 && n <= muster.MaxFileBytesCap {
			rc.MaxFileBytes = n
		} else {
			r.at(p, "%s: want a number of bytes, 1 to %d (the default is %d, 100 MB)", k, int64(muster.MaxFileBytesCap), muster.DefaultMaxFileBytes)
		}
	case "max_tasks":
		rc.MaxTasks = r.count(v, 1, p)
	case "max_pids":
		rc.MaxPids = r.count(v, muster.MinMaxPids, p)
	case "max_memory":
		rc.MaxMemory = r.bytes(v, muster.MinMaxMemory, p)
	}
}

// fleet reads the [fleet] table. A URL with user-info is refused, and so
// are the shared user/password and nkey settings of earlier versions: a
// fleet's clients hold credentials of their own (muster fleet
// credentials).
func (r *reader) fleet(fc *muster.FleetConfig, t map[string]any) {
	for _, k := range r.sortedKeys(t, "fleet") {
		v, p := t[k], []string{"fleet", k}
		switch k {
		case "nats":
			fc.NATS = r.str(v, p)
			if strings.Contains(fc.NATS, "@") {
				r.at(p, "nats: no credentials in the URL: set [fleet] creds to a file muster fleet credentials issued")
			}
		case "creds":
			fc.Creds = r.str(v, p)
		case "user", "password_env", "nkey_seed_file", "nkeys":
			r.at(p, "%s: a fleet no longer shares a user, a password or nkeys: each host holds credentials of its own; issue them with muster fleet credentials NAME --store DIR -o FILE and set [fleet] creds = \"FILE\" (docs/fleet.md)", k)
		case "tls_ca":
			fc.TLSCA = r.str(v, p)
		case "tls_cert":
			fc.TLSCert = r.str(v, p)
		case "tls_key":
			fc.TLSKey = r.str(v, p)
		case "lease":
			fc.Lease = r.duration(v, p)
		case "run_ttl":
			fc.RunTTL = r.duration(v, p)
		case "join_wait":
			fc.JoinWait = r.duration(v, p)
		case "trust_worker_gates":
			if b, ok := v.(bool); ok {
				fc.TrustWorkerGates = b
			} else {
				r.at(p, "%s: want true or false", k)
			}
		default:
			r.unknown(fleetKeys, p...)
		}
	}
}

func (r *reader) gates(t map[string]any, n *muster.Network) []muster.GateSpec {
	var out []muster.GateSpec
	for _, name := range r.sortedKeys(t, "gates") {
		p := []string{"gates", name}
		if r.netKey(n, name, t[name], p, true) {
			continue
		}
		if tt, ok := t[name].(map[string]any); ok {
			if g, ok := r.gateTable(name, tt, p); ok {
				out = append(out, g)
			}
			continue
		}
		s, ok := t[name].(string)
		if !ok || strings.TrimSpace(s) == "" {
			r.at(p, `gate %s: want a command string, such as %s = "go test ./..."`, name, name)
			continue
		}
		out = append(out, muster.GateSpec{Name: name, Command: s, Line: r.pos.line(p...)})
	}
	return out
}

// count reads a whole number of at least lo.
func (r *reader) count(v any, lo int, p []string) int {
	n, ok := v.(int64)
	if ok && n > math.MaxInt32 {
		r.at(p, "%s: want a whole number, %d to %d", p[len(p)-1], lo, math.MaxInt32)
		return 0
	}
	if !ok || n < int64(lo) {
		r.at(p, "%s: want a whole number, %d or more", p[len(p)-1], lo)
		return 0
	}
	return int(n)
}

// bytes reads a size of at least lo bytes: a whole number of bytes, or
// a string of one with a unit ("512MB", "2GiB": K, M, G, T in powers of
// 1000, Ki, Mi, Gi, Ti in powers of 1024, the B optional).
func (r *reader) bytes(v any, lo int64, p []string) int64 {
	bad := func() int64 {
		r.at(p, "%s: want a size of %d bytes or more: a number of bytes, or a string such as \"512MB\" or \"2GiB\"", p[len(p)-1], lo)
		return 0
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case string:
		var ok bool
		if n, ok = muster.ParseBytes(x); !ok {
			return bad()
		}
	default:
		return bad()
	}
	if n < lo || n > 1<<50 {
		return bad()
	}
	return n
}

// race reads [run] race: the number of candidates (2 to muster.MaxRace)
// or "first", the default Race: of agent tasks.
func (r *reader) race(rc *muster.RunConfig, v any, p []string) {
	if s, ok := v.(string); ok && strings.EqualFold(s, "first") {
		rc.RaceFirst = true
		return
	}
	n, ok := v.(int64)
	if !ok || n < 2 || n > muster.MaxRace {
		r.at(p, "race: want the number of candidates, 2 to %d, or \"first\"", muster.MaxRace)
		return
	}
	rc.Race = int(n)
}

// number reads a number of zero or more.
func (r *reader) number(v any, p []string) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		r.at(p, "%s: want a number", p[len(p)-1])
		return 0, false
	}
	if !(f >= 0) || f > 1e12 {
		r.at(p, "%s: want a number, 0 or more", p[len(p)-1])
		return 0, false
	}
	return f, true
}

func (r *reader) str(v any, p []string) string {
	s, ok := v.(string)
	if !ok {
		r.at(p, "%s: want a string", p[len(p)-1])
	}
	return s
}

func (r *reader) strings(v any, p []string) []string {
	a, ok := v.([]any)
	if !ok {
		r.at(p, `%s: want a list of strings, such as ["a", "b"]`, p[len(p)-1])
		return nil
	}
	out := make([]string, 0, len(a))
	for _, x := range a {
		s, ok := x.(string)
		if !ok {
			r.at(p, `%s: want a list of strings, such as ["a", "b"]`, p[len(p)-1])
			return nil
		}
		out = append(out, s)
	}
	return out
}

// paths reads a list of absolute paths; "~/" at the start of one is the
// user's home directory.
func (r *reader) paths(v any, p []string) []string {
	var out []string
	for _, s := range r.strings(v, p) {
		if rest, ok := strings.CutPrefix(s, "~/"); ok || s == "~" {
			home, err := os.UserHomeDir()
			if err != nil {
				r.at(p, "%s: %q: cannot tell the home directory: %v", p[len(p)-1], s, err)
				continue
			}
			s = filepath.Join(home, rest)
		}
		if !filepath.IsAbs(s) {
			r.at(p, `%s: %q: want an absolute path (or one starting with "~/")`, p[len(p)-1], s)
			continue
		}
		out = append(out, filepath.Clean(s))
	}
	return out
}

func (r *reader) oneOf(v any, p []string, allowed ...string) string {
	return oneOf(r, v, p, allowed)
}

// oneOf reads a value that must be one of allowed (a policy's list, in
// the order of the documentation), naming them when it is not.
func oneOf[T ~string](r *reader, v any, p []string, allowed []T) T {
	s, ok := v.(string)
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	if !ok || !contains(names, s) {
		r.at(p, "%s: want %s", p[len(p)-1], quoteOr(names))
		return ""
	}
	return T(s)
}

func (r *reader) duration(v any, p []string) time.Duration {
	s, ok := v.(string)
	d, err := time.ParseDuration(s)
	if !ok || err != nil || d <= 0 {
		r.at(p, `%s: want a duration such as "20m" or "1h30m"`, p[len(p)-1])
		return 0
	}
	return d
}

// wait is a duration that may be zero ("0s": not at all).
func (r *reader) wait(v any, p []string) *time.Duration {
	s, ok := v.(string)
	d, err := time.ParseDuration(s)
	if !ok || err != nil || d < 0 {
		r.at(p, `%s: want a duration such as "5s", or "0s" for none`, p[len(p)-1])
		return nil
	}
	return &d
}

func (r *reader) authorities(v any, p []string) []muster.Authority {
	var out []muster.Authority
	for _, s := range r.strings(v, p) {
		a := muster.Authority(s)
		switch a {
		case muster.AuthorityRead, muster.AuthorityWrite, muster.AuthorityShell:
			out = append(out, a)
		default:
			r.at(p, `%s: unknown authority %q: want "read", "write" or "shell"`, p[len(p)-1], s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteOr(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// Resolve returns the configuration for a command: the file explicit
// when it is set (it must exist: the --config flag), else FileName in
// repoDir when that file exists, else Default().
func Resolve(repoDir, explicit string) (*muster.Config, error) {
	if explicit != "" {
		return Load(explicit)
	}
	path := filepath.Join(repoDir, FileName)
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Default(), nil
		}
		return nil, &muster.Error{Code: muster.CodeInvalid, Op: "read config", Err: err}
	}
	return Load(path)
}

package muster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ExecKind names an executor kind: the adapter that drives an executor.
type ExecKind string

// Executor kinds known to muster.
const (
	ExecClaudeCode ExecKind = "claude-code"
	ExecCodex      ExecKind = "codex"
	ExecGemini     ExecKind = "gemini"
	ExecOpencode   ExecKind = "opencode"
	ExecOpenAI     ExecKind = "openai"
	ExecAnthropic  ExecKind = "anthropic"
	ExecCommand    ExecKind = "command"
	ExecSim        ExecKind = "sim"
	ExecACP        ExecKind = "acp"
	ExecClaudeACP  ExecKind = "claude-acp"
	ExecCodexACP   ExecKind = "codex-acp"
	ExecGeminiACP  ExecKind = "gemini-acp"
	ExecQwen       ExecKind = "qwen"
	ExecCopilot    ExecKind = "copilot"
	ExecPi         ExecKind = "pi"
)

// KindFamily groups executor kinds by how muster drives them.
type KindFamily string

// Kind families.
const (
	FamilyCLI     KindFamily = "cli"     // an agent CLI's own headless mode
	FamilyACP     KindFamily = "acp"     // an Agent Client Protocol agent
	FamilyHTTP    KindFamily = "http"    // muster's own tool loop over a model API
	FamilyCommand KindFamily = "command" // any program (the executor protocol)
	FamilySim     KindFamily = "sim"     // the built-in simulated agent
)

// KindInfo is one executor kind of the registry.
type KindInfo struct {
	Name   ExecKind
	Family KindFamily
	// NeedsCommand says the executor must set command = [...].
	NeedsCommand bool
	// KeyEnv is the variable holding the API key of an HTTP kind when
	// api_key_env names none (a CLI or ACP kind's is in
	// internal/agentkit's row).
	KeyEnv string
}

// Kinds is the registry of executor kinds, in a fixed order. Config
// validation, the adapters (internal/agents), the CLI details
// (internal/agentkit), doctor and docs/agents.md all follow it; a test in
// internal/agents checks that each kind has all of them.
var Kinds = []KindInfo{
	{Name: ExecClaudeCode, Family: FamilyCLI},
	{Name: ExecCodex, Family: FamilyCLI},
	{Name: ExecGemini, Family: FamilyCLI},
	{Name: ExecOpencode, Family: FamilyCLI},
	{Name: ExecPi, Family: FamilyCLI},
	{Name: ExecACP, Family: FamilyACP, NeedsCommand: true},
	{Name: ExecClaudeACP, Family: FamilyACP},
	{Name: ExecCodexACP, Family: FamilyACP},
	{Name: ExecGeminiACP, Family: FamilyACP},
	{Name: ExecQwen, Family: FamilyACP},
	{Name: ExecCopilot, Family: FamilyACP},
	{Name: ExecOpenAI, Family: FamilyHTTP, KeyEnv: "OPENAI_API_KEY"},
	{Name: ExecAnthropic, Family: FamilyHTTP, KeyEnv: "ANTHROPIC_API_KEY"},
	{Name: ExecCommand, Family: FamilyCommand, NeedsCommand: true},
	{Name: ExecSim, Family: FamilySim},
}

// ExecutorKinds lists every known executor kind's name, in registry order.
var ExecutorKinds = kindNames()

func kindNames() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k.Name)
	}
	return out
}

// LookupKind returns the registry entry of the kind named name, or nil.
func LookupKind(name ExecKind) *KindInfo {
	for i := range Kinds {
		if Kinds[i].Name == name {
			return &Kinds[i]
		}
	}
	return nil
}

// Defaults of [run] (its policies are in policy.go).
const (
	DefaultMaxRounds    = 3
	DefaultGraceSeconds = 10
)

// ExecutorSpec is one [executors.NAME] table of muster.toml, or a --crew flag.
type ExecutorSpec struct {
	Name   string   `json:"name"`
	Kind   ExecKind `json:"kind"`
	Clones int      `json:"clones"`
	Roles  []Role   `json:"roles,omitempty"`
	Model  string   `json:"model,omitempty"`
	// Models are the models a task may ask for (Model:) on this executor;
	// empty: any model, passed to the agent as it is.
	Models        []string          `json:"models,omitempty"`
	BaseURL       string            `json:"base_url,omitempty"`
	APIKeyEnv     string            `json:"api_key_env,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Args          []string          `json:"args,omitempty"`
	Command       []string          `json:"command,omitempty"`
	Timeout       time.Duration     `json:"timeout,omitempty"`
	MaxConcurrent int               `json:"max_concurrent,omitempty"`
	// Writable lists paths this executor's agents may write under
	// confinement, besides what every agent may ([run] writable).
	Writable []string `json:"writable,omitempty"`
	// EnvAllow names variables of muster's environment that look like
	// credentials but this executor's agents get all the same ([run]
	// env_allow adds to it).
	EnvAllow []string `json:"env_allow,omitempty"`
	// Network overrides [run] network for this executor's agents;
	// AllowHosts adds to [run] allow_hosts (ARCHITECTURE.md §8.5).
	Network    NetworkPolicy `json:"network,omitempty"`
	AllowHosts []string      `json:"allow_hosts,omitempty"`
	// Seed drives the sim kind, so a simulated run is repeatable.
	Seed int64 `json:"seed,omitempty"`
	// Speed scales the sim kind's delays (1 = as given; 0 = no delay).
	Speed float64 `json:"speed,omitempty"`
	// Fleet marks an executor the fleet's workers serve (muster run
	// --nats): its clones are theirs, pooled by name.
	Fleet bool `json:"fleet,omitempty"`
	// Line is where the table starts in the config file (0 for flags).
	Line int `json:"-"`
}

// HasRole reports whether the executor's clones take the role. An
// executor with no roles listed is a coder.
func (e *ExecutorSpec) HasRole(role Role) bool {
	if len(e.Roles) == 0 {
		return role == RoleCoder
	}
	for _, r := range e.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// Capacity is how many of the executor's clones may work at once: its
// clones (at least one), capped by max_concurrent.
func (e *ExecutorSpec) Capacity() int {
	n := e.Clones
	if n <= 0 {
		n = 1
	}
	if e.MaxConcurrent > 0 && e.MaxConcurrent < n {
		n = e.MaxConcurrent
	}
	return n
}

// Credential names the account an executor's agents spend: its
// api_key_env, else its kind's own account (the default key or login).
// Rate limits pace every executor of one credential together.
func (e *ExecutorSpec) Credential() string {
	if e.APIKeyEnv != "" {
		return "env:" + e.APIKeyEnv
	}
	return "kind:" + string(e.Kind)
}

// OffersModel reports whether a task asking for model m may run on the
// executor: m is empty, the executor lists no models, or m is its model
// or one of its models.
func (e *ExecutorSpec) OffersModel(m string) bool {
	if m == "" || len(e.Models) == 0 || m == e.Model {
		return true
	}
	for _, x := range e.Models {
		if x == m {
			return true
		}
	}
	return false
}

// Slot names one clone of an executor: "name#n", n from 1.
func Slot(executor string, clone int) string { return executor + "#" + strconv.Itoa(clone) }

// GateSpec is a named gate command from [gates].
type GateSpec struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	// JUnit is a glob, relative to the clone, of the JUnit XML reports
	// the gate writes ([gates.NAME] junit): muster reads its failing
	// tests there.
	JUnit string `json:"junit,omitempty"`
	Line  int    `json:"-"`
}

// RunConfig is the [run] table.
type RunConfig struct {
	MaxParallel     int               `json:"max_parallel,omitempty"` // 0: number of coder clones
	OnFailure       OnFailurePolicy   `json:"on_failure,omitempty"`
	BudgetUSDMicros int64             `json:"budget_usd_micros,omitempty"`
	BudgetTokens    int64             `json:"budget_tokens,omitempty"`
	Writers         int               `json:"writers,omitempty"` // 0: unlimited; 1: single-writer mode
	OnViolation     OnViolationPolicy `json:"on_violation,omitempty"`
	Noop            NoopPolicy        `json:"noop,omitempty"`
	// ReviewPartial ("refuse", the default, or "allow") says whether a
	// review whose prompt could not hold the whole diff may approve.
	ReviewPartial ReviewPartialPolicy `json:"review_partial,omitempty"`
	MaxRounds     int                 `json:"max_rounds,omitempty"`
	// MaxBatch bounds how many waiting commits one integration batch
	// gates together (0: DefaultMaxBatch; 1: each on its own).
	MaxBatch int `json:"max_batch,omitempty"`
	// Race and RaceFirst are [run] race: the Race: of every agent task
	// that sets none (0 and false: no race).
	Race              int         `json:"race,omitempty"`
	RaceFirst         bool        `json:"race_first,omitempty"`
	VerifyIntegration *bool       `json:"verify_integration,omitempty"`
	Approve           []Authority `json:"approve,omitempty"`
	RequireApproval   []Authority `json:"require_approval,omitempty"`
	Keep              []string    `json:"keep,omitempty"` // paths kept when a worktree is cleaned
	// Guard is what muster does when the user's repository changes
	// during an attempt (refs, config, hooks...): GuardRestore (""),
	// GuardDetect or GuardOff.
	Guard        GuardPolicy   `json:"guard,omitempty"`
	Grace        time.Duration `json:"grace,omitempty"`
	GateTimeout  time.Duration `json:"gate_timeout,omitempty"`
	Reviewers    int           `json:"reviewers,omitempty"` // reviewers per task
	StallTimeout time.Duration `json:"stall_timeout,omitempty"`
	// ReviewWait is how long a change waits for a reviewer of another
	// executor before the coder's own executor reviews it (nil:
	// DefaultReviewWait; 0: at once). Config.ReviewWait reads it.
	ReviewWait *time.Duration `json:"review_wait,omitempty"`
	PricesFile string         `json:"prices_file,omitempty"`
	// Confine is ConfineAuto (""), ConfineRequired or ConfineOff.
	Confine ConfineMode `json:"confine,omitempty"`
	// Writable lists absolute paths every agent and gate may write under
	// confinement, besides its clone, its home, its temp dir and /tmp.
	Writable []string `json:"writable,omitempty"`
	// Hide lists absolute paths covered (empty) in every confined
	// invocation's mount namespace, besides the default hide list
	// (credentials, socket directories; docs/security.md).
	Hide []string `json:"hide,omitempty"`
	// EnvAllow names variables that look like credentials but are none:
	// every agent and gate gets them, and they are not redacted.
	EnvAllow []string `json:"env_allow,omitempty"`
	// Network is the agents' network policy ("": provider) and
	// AllowHosts the hosts its proxy lets them reach.
	Network    NetworkPolicy `json:"network,omitempty"`
	AllowHosts []string      `json:"allow_hosts,omitempty"`
	// MaxFileBytes caps the size of one changed file (0:
	// DefaultMaxFileBytes), checked by lstat before anything reads it.
	MaxFileBytes int64 `json:"max_file_bytes,omitempty"`
	// MaxTasks caps the tasks of a run, the plan's and every delegated
	// one (0: MaxTasksFor the plan).
	MaxTasks int `json:"max_tasks,omitempty"`
	// MaxPids and MaxMemory (bytes) bound each confined invocation's
	// processes and memory through a cgroup of its own (0: no bound).
	MaxPids   int   `json:"max_pids,omitempty"`
	MaxMemory int64 `json:"max_memory,omitempty"`
}

// MaxTasksFor is the cap on a run's tasks for a plan of n tasks: [run]
// max_tasks when set, else ten times the plan's tasks and at least
// DefaultMinMaxTasks.
func (c *Config) MaxTasksFor(n int) int {
	if c != nil && c.Run.MaxTasks > 0 {
		return c.Run.MaxTasks
	}
	return max(10*n, DefaultMinMaxTasks)
}

// Config is a parsed muster.toml merged with command-line overrides.
type Config struct {
	Source    string          `json:"source,omitempty"`
	Run       RunConfig       `json:"run"`
	Executors []*ExecutorSpec `json:"executors"`
	Gates     []GateSpec      `json:"gates,omitempty"`
	// GatesNet is [gates] network, allow_hosts and host_ports; SetupNet
	// is [setup] network and allow_hosts.
	GatesNet GatesNetwork `json:"gates_network,omitzero"`
	SetupNet SetupNetwork `json:"setup_network,omitzero"`
	// Setup are the [setup] commands, in file order.
	Setup []SetupStep `json:"setup,omitempty"`
	Pool  PoolConfig  `json:"pool,omitzero"`
	Fleet FleetConfig `json:"fleet,omitzero"`
}

// PoolConfig is the [pool] table: the clones muster keeps in its cache
// between runs of a repository.
type PoolConfig struct {
	// MaxClones bounds the free clones kept (least recently used go
	// first); 0: the default (16).
	MaxClones int `json:"max_clones,omitempty"`
}

// FleetConfig is the [fleet] table: where the fleet's NATS server is and
// how to reach it. It never holds a secret itself: Creds names a NATS
// .creds file (muster fleet credentials issues them).
type FleetConfig struct {
	NATS    string `json:"nats,omitempty"`     // server URL, without user-info
	Creds   string `json:"creds,omitempty"`    // the .creds file of this host's fleet identity
	TLSCA   string `json:"tls_ca,omitempty"`   // CA bundle to verify the other side
	TLSCert string `json:"tls_cert,omitempty"` // certificate (server: its own; client: for mutual TLS)
	TLSKey  string `json:"tls_key,omitempty"`
	// Lease is a worker's lease on a task (the ack wait).
	Lease time.Duration `json:"lease,omitempty"`
	// TrustWorkerGates takes the gate results a worker reports instead of
	// running the task's gates again on the orchestrator: it trusts the
	// worker machines.
	TrustWorkerGates bool `json:"trust_worker_gates,omitempty"`
	// RunTTL is how long workers keep the orchestrator's attempts running
	// once its presence lapses (a kill -9, a lost network): a resume
	// within it adopts them. 0: DefaultRunTTL.
	RunTTL time.Duration `json:"run_ttl,omitempty"`
	// JoinWait is how long a fleet run that has nothing else to do waits
	// for a worker serving an executor a ready task needs (one nobody
	// serves yet) to join, before it skips the task. 0: DefaultJoinWait.
	JoinWait time.Duration `json:"join_wait,omitempty"`
}

// DefaultRunTTL is [fleet] run_ttl's default.
const DefaultRunTTL = 5 * time.Minute

// DefaultJoinWait is [fleet] join_wait's default.
const DefaultJoinWait = 5 * time.Minute

// JoinWaitOrDefault is [fleet] join_wait, or its default.
func (f FleetConfig) JoinWaitOrDefault() time.Duration {
	if f.JoinWait > 0 {
		return f.JoinWait
	}
	return DefaultJoinWait
}

// Executor returns the executor spec with the given name, or nil.
func (c *Config) Executor(name string) *ExecutorSpec {
	for _, e := range c.Executors {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// KeyVars returns the variables the executors' api_key_env name, each
// once, in executor order.
func (c *Config) KeyVars() []string {
	var out []string
	for _, e := range c.Executors {
		if e.APIKeyEnv != "" && !slices.Contains(out, e.APIKeyEnv) {
			out = append(out, e.APIKeyEnv)
		}
	}
	return out
}

// ScopeKeys keeps each executor's key to that executor: it removes every
// api_key_env variable from [run] env_allow (which gates and every agent
// get) and from the env_allow of every executor but the one whose key it
// is. It returns a warning for each entry it removed.
func (c *Config) ScopeKeys() []string {
	owner := map[string][]string{}
	for _, e := range c.Executors {
		if e.APIKeyEnv != "" {
			owner[e.APIKeyEnv] = append(owner[e.APIKeyEnv], e.Name)
		}
	}
	var warnings []string
	drop := func(list []string, where string, own string) []string {
		kept := list[:0:0]
		for _, n := range list {
			if names, ok := owner[n]; ok && n != own {
				warnings = append(warnings, fmt.Sprintf("%s env_allow names %s, the api_key_env of executor %s: only that executor's agents get it",
					where, n, strings.Join(names, ", ")))
				continue
			}
			kept = append(kept, n)
		}
		return kept
	}
	c.Run.EnvAllow = drop(c.Run.EnvAllow, "[run]", "")
	for _, e := range c.Executors {
		e.EnvAllow = drop(e.EnvAllow, "[executors."+e.Name+"]", e.APIKeyEnv)
	}
	return warnings
}

// EnvAllowOf returns the variables the executor's agents get although
// they look like credentials: [run] env_allow, the executor's env_allow
// and its api_key_env.
func (c *Config) EnvAllowOf(e *ExecutorSpec) []string {
	out := append([]string(nil), c.Run.EnvAllow...)
	if e != nil {
		out = append(out, e.EnvAllow...)
		if e.APIKeyEnv != "" {
			out = append(out, e.APIKeyEnv)
		}
	}
	return out
}

// Grace returns the SIGTERM-to-SIGKILL grace period.
func (c *Config) Grace() time.Duration {
	if c.Run.Grace > 0 {
		return c.Run.Grace
	}
	return DefaultGraceSeconds * time.Second
}

// DefaultReviewWait is [run] review_wait's default.
const DefaultReviewWait = 5 * time.Second

// ReviewWait is [run] review_wait, or its default.
func (c *Config) ReviewWait() time.Duration {
	if c.Run.ReviewWait != nil {
		return *c.Run.ReviewWait
	}
	return DefaultReviewWait
}

// DefaultMaxBatch is [run] max_batch's default.
const DefaultMaxBatch = 8

// MaxBatch returns the bound on an integration batch.
func (c *Config) MaxBatch() int {
	if c.Run.MaxBatch > 0 {
		return c.Run.MaxBatch
	}
	return DefaultMaxBatch
}

// MaxRounds returns the bound on fix rounds per attempt.
func (c *Config) MaxRounds() int {
	if c.Run.MaxRounds > 0 {
		return c.Run.MaxRounds
	}
	return DefaultMaxRounds
}

package muster

import (
	"strconv"
	"strings"
	"time"
)

// Caps on what a plan, a config or a flag may ask for. validate and run
// refuse more, each with FILE:LINE (README "Caps"); an agent-written
// fragment is held to its delegator's values, which are within them.
const (
	// MaxIDLength bounds a task ID and a run ID (characters).
	MaxIDLength = 100
	// MaxTitleLength bounds a task title (bytes).
	MaxTitleLength = 300
	// MaxClones bounds an executor's clones (muster.toml and --crew).
	MaxClones = 1000
	// MaxDelegationDepth bounds a task's Delegates: N.
	MaxDelegationDepth = 5
	// MaxRace bounds a task's Race: N (and [run] race).
	MaxRace = 8
	// MaxRetries bounds a task's Retries.
	MaxRetries = 10
	// MaxTaskTimeout bounds a task's Timeout and an executor's timeout.
	MaxTaskTimeout = 48 * time.Hour
	// MaxBudgetMicros bounds a task's Budget and the run's budget_usd
	// ($1,000,000).
	MaxBudgetMicros = 1_000_000 * 1_000_000
	// MaxBudgetTokens bounds a task's and the run's token budget.
	MaxBudgetTokens = 1_000_000_000_000
	// DefaultMaxFileBytes is the default cap on the size of one changed
	// file ([run] max_file_bytes): 100 MB. muster checks it with lstat
	// before anything reads the file.
	DefaultMaxFileBytes = 100_000_000
	// MaxOversizeFiles bounds how many files over max_file_bytes one
	// staging names and leaves out; more fails the staging.
	MaxOversizeFiles = 1000
	// DefaultMinMaxTasks is the least the default cap on a run's tasks
	// ([run] max_tasks) is: ten times the plan's tasks, at least this.
	DefaultMinMaxTasks = 100
	// MaxFileBytesCap bounds [run] max_file_bytes (1 TB).
	MaxFileBytesCap = 1 << 40
	// MinMaxPids is the least [run] max_pids may be: the sandbox's stage
	// one, the program and a shell need a few.
	MinMaxPids = 8
	// MinMaxMemory is the least [run] max_memory may be (16 MiB).
	MinMaxMemory = 16 << 20
)

// ParseBytes reads a size: a whole number of bytes with an optional unit
// (K, M, G, T: powers of 1000; Ki, Mi, Gi, Ti: powers of 1024; a
// trailing B optional, case ignored). ok is false for anything else.
func ParseBytes(s string) (n int64, ok bool) {
	s = strings.TrimSpace(s)
	u := strings.ToUpper(s)
	u = strings.TrimSuffix(u, "B")
	mult := int64(1)
	units := []struct {
		suffix string
		mult   int64
	}{{"KI", 1 << 10}, {"MI", 1 << 20}, {"GI", 1 << 30}, {"TI", 1 << 40}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}}
	for _, un := range units {
		if strings.HasSuffix(u, un.suffix) {
			u, mult = strings.TrimSuffix(u, un.suffix), un.mult
			break
		}
	}
	u = strings.TrimSpace(u)
	v, err := strconv.ParseInt(u, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, false
	}
	return v * mult, true
}

// ReservedPaths are the repository paths no task may own or change: the
// config (muster.toml; the file in use, when another, is reserved by the
// command line), muster's directory and git's.
var ReservedPaths = []string{"muster.toml", ".muster/", ".git/"}

// HasControl reports whether s holds a control character (NUL, a
// newline, an escape...), a line or paragraph separator or a
// bidirectional override or isolate (which makes a commit's subject read
// differently from what it is), which an ID or a title may not.
func HasControl(s string) bool {
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return true
		case r == 0x2028 || r == 0x2029 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return true
		}
	}
	return false
}

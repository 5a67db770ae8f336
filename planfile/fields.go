package planfile

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/suggest"
)

// KeySpec is one task field key of the plan format and what muster must
// know of it wherever plans are read or checked. A new key is one row
// here (CONTRIBUTING.md, "A new plan key"); the parsers, the YAML form,
// the "did you mean" hints and checkTrust all read this table.
type KeySpec struct {
	// Name is the documented spelling; keys match without regard to case.
	Name string
	// List keys may repeat; their comma-separated values append.
	List bool
	// Command keys hold commands muster runs through sh -c. In an
	// agent-written fragment only a delegator with Authority shell may
	// use them (ARCHITECTURE.md §2.3; the plan's trust rules).
	Command bool
	// Capped keys, in an agent-written fragment, may not ask for more than
	// the delegating task has.
	Capped bool
}

// KeySpecs is the table of task field keys, in documentation order.
var KeySpecs = []KeySpec{
	{Name: "After", List: true},
	{Name: "Owns", List: true},
	{Name: "Reads", List: true},
	{Name: "Gate", List: true, Command: true},
	{Name: "Executor"},
	{Name: "Model"},
	{Name: "Role"},
	{Name: "Kind"},
	{Name: "Run", Command: true},
	{Name: "Satisfies", List: true},
	{Name: "Timeout"},
	{Name: "Retries"},
	{Name: "Review"},
	{Name: "Authority", Capped: true},
	{Name: "Budget"},
	{Name: "Delegates", Capped: true},
	{Name: "Loop", Command: true},
	{Name: "Race"},
}

// Keys lists the documented spelling of every task field key.
var Keys = func() []string {
	out := make([]string, len(KeySpecs))
	for i, k := range KeySpecs {
		out[i] = k.Name
	}
	return out
}()

// keySpec returns the row of a key (any case).
func keySpec(k string) (KeySpec, bool) {
	for _, s := range KeySpecs {
		if strings.EqualFold(s.Name, k) {
			return s, true
		}
	}
	return KeySpec{}, false
}

// isList reports whether a key (any case) may repeat.
func isList(k string) bool {
	s, _ := keySpec(k)
	return s.List
}

// DefaultLoopMax is the number of check attempts of a Loop without max=N.
const DefaultLoopMax = 3

// MaxLoopMax bounds a Loop's max=N.
const MaxLoopMax = 5

// problems collects problems of one file.
type problems struct {
	file     string
	list     muster.Problems
	hasCycle bool // checkCycles found one
	// reserved are paths no task may own besides muster.ReservedPaths
	// (the config file in use).
	reserved []string
}

func (ps *problems) addf(line int, format string, args ...any) {
	ps.list = append(ps.list, muster.Problem{File: ps.file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// canonicalKey returns the documented spelling of a key, or "".
func canonicalKey(k string) string {
	s, _ := keySpec(k)
	return s.Name
}

// unknownKey reports a key that is not known, with the nearest of
// candidates as a hint.
func (ps *problems) unknownKey(line int, key string, candidates []string) {
	if s := suggest.Nearest(key, candidates); s != "" {
		ps.addf(line, "unknown key %q; did you mean %q?", key, s)
		return
	}
	ps.addf(line, "unknown key %q", key)
}

// setField applies one "Key: value" to t. name is the documented key
// (from canonicalKey). A list key appends; a scalar key may appear once.
func (ps *problems) setField(t *muster.Task, name, value string, line int) {
	k := strings.ToLower(name)
	value = strings.TrimSpace(value)
	if t.KeyLines == nil {
		t.KeyLines = map[string]int{}
	}
	if first, seen := t.KeyLines[k]; seen && !isList(k) {
		ps.addf(line, "duplicate key %s (first on line %d)", name, first)
		return
	}
	if _, seen := t.KeyLines[k]; !seen {
		t.KeyLines[k] = line
	}
	if value == "" && k != "after" && k != "review" {
		ps.addf(line, "%s needs a value", name)
		return
	}
	ps.applyField(t, k, value, line)
}

// applyField sets the field of key k (lower case) from a trimmed value:
// lists and free text here, each checked value in its own setter.
func (ps *problems) applyField(t *muster.Task, k, value string, line int) {
	switch k {
	case "after":
		t.After = append(t.After, itemsAt(t, k, line, afterList(value))...)
	case "owns":
		t.Owns = append(t.Owns, itemsAt(t, k, line, splitList(value))...)
	case "reads":
		t.Reads = append(t.Reads, itemsAt(t, k, line, splitList(value))...)
	case "satisfies":
		t.Satisfies = append(t.Satisfies, itemsAt(t, k, line, splitList(value))...)
	case "gate":
		// A gate is one command: commas belong to it.
		t.Gates = append(t.Gates, itemsAt(t, k, line, []string{value})...)
	case "executor":
		// A list names a race's candidates (accepted only with Race:,
		// checkRace); one name is the executor, as ever.
		if t.Executor = value; strings.Contains(value, ",") {
			t.Executor, t.Candidates = "", splitList(value)
		}
	case "race":
		ps.setRace(t, value, line)
	case "model":
		t.Model = value
	case "role":
		t.Role = muster.Role(value)
	case "run":
		t.Run = value
	case "kind":
		ps.setKind(t, value, line)
	case "timeout":
		ps.setTimeout(t, value, line)
	case "retries":
		ps.setRetries(t, value, line)
	case "review":
		ps.setReview(t, value, line)
	case "authority":
		ps.setAuthority(t, value, line)
	case "budget":
		b, err := ParseBudget(value)
		if err != nil {
			ps.addf(line, "bad Budget %q: %v", value, err)
			return
		}
		t.Budget = b
	case "delegates":
		ps.setDelegates(t, value, line)
	case "loop":
		l, err := ParseLoop(value)
		if err != nil {
			ps.addf(line, "bad Loop %q: %v", value, err)
			return
		}
		t.Loop = l
	}
}

// itemsAt records that the items of list key k on this line are on it
// (Task.ItemLines), and returns them.
func itemsAt[T any](t *muster.Task, k string, line int, items []T) []T {
	if t.ItemLines == nil {
		t.ItemLines = map[string][]int{}
	}
	for range items {
		t.ItemLines[k] = append(t.ItemLines[k], line)
	}
	return items
}

// afterList reads an After value: task ids, "-" alone or as an item
// meaning none.
func afterList(value string) []muster.TaskID {
	if value == "-" {
		return nil
	}
	var out []muster.TaskID
	for _, v := range splitList(value) {
		if v != "-" {
			out = append(out, muster.TaskID(v))
		}
	}
	return out
}

func (ps *problems) setKind(t *muster.Task, value string, line int) {
	switch v := strings.ToLower(value); v {
	case muster.KindAgent, muster.KindCode:
		t.Kind = v
	default:
		ps.addf(line, "bad Kind %q: want agent or code", value)
	}
}

func (ps *problems) setTimeout(t *muster.Task, value string, line int) {
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		ps.addf(line, "bad Timeout %q: want a duration such as 20m or 1h30m", value)
		return
	}
	if d > muster.MaxTaskTimeout {
		ps.addf(line, "Timeout %s is more than the cap of %s: a task that runs longer should be split", d, muster.MaxTaskTimeout)
		return
	}
	t.Timeout = d
}

func (ps *problems) setRetries(t *muster.Task, value string, line int) {
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		ps.addf(line, "bad Retries %q: want a whole number, 0 or more", value)
		return
	}
	if n > muster.MaxRetries {
		ps.addf(line, "Retries %d is more than the cap of %d", n, muster.MaxRetries)
		return
	}
	t.Retries = n
}

func (ps *problems) setReview(t *muster.Task, value string, line int) {
	switch strings.ToLower(value) {
	case "":
	case "none":
		t.Review = "none"
	default:
		ps.addf(line, "bad Review %q: want none (or leave the key out)", value)
	}
}

func (ps *problems) setAuthority(t *muster.Task, value string, line int) {
	switch a := muster.Authority(strings.ToLower(value)); a {
	case muster.AuthorityRead, muster.AuthorityWrite, muster.AuthorityShell:
		t.Authority = a
	default:
		ps.addf(line, "bad Authority %q: want read, write or shell", value)
	}
}

// setDelegates reads yes, no or a depth; yes is depth 1.
func (ps *problems) setDelegates(t *muster.Task, value string, line int) {
	t.Delegates, t.DelegateDepth = false, 0
	switch v := strings.ToLower(value); v {
	case "yes", "true":
		t.Delegates = true
	case "no", "false":
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > muster.MaxDelegationDepth {
			ps.addf(line, "bad Delegates %q: want yes, no or the levels of delegation, 0 to %d (the cap)", value, muster.MaxDelegationDepth)
			return
		}
		// yes is 1, and hashes as it did: the depth is kept only above 1.
		if t.Delegates = n > 0; n > 1 {
			t.DelegateDepth = n
		}
	}
}

// setRace reads Race: N (2 to muster.MaxRace candidates) or Race: first.
func (ps *problems) setRace(t *muster.Task, value string, line int) {
	if strings.EqualFold(value, "first") {
		t.RaceFirst = true
		return
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 2 || n > muster.MaxRace {
		ps.addf(line, "bad Race %q: want the number of candidates, 2 to %d, or first", value, muster.MaxRace)
		return
	}
	t.Race = n
}

// splitList splits a comma-separated value, trimming items and dropping
// empty ones.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// ParseBudget reads a Budget value: a dollar amount ("$2", "$0.50"), a
// token count ("5000 tokens", "200k tokens", "1.5M tokens"), or one of
// each separated by a comma ("$2, 200k tokens").
func ParseBudget(s string) (muster.Budget, error) {
	var b muster.Budget
	parts := splitList(s)
	if len(parts) == 0 || len(parts) > 2 {
		return b, errBudget
	}
	for _, p := range parts {
		if strings.HasPrefix(p, "$") {
			if b.USDMicros != 0 {
				return b, errBudget
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(p[1:]), 64)
			if err != nil || !(f > 0) {
				return b, errBudget
			}
			if f*1e6 > muster.MaxBudgetMicros {
				return b, fmt.Errorf("$%g is more than the cap of $%d", f, muster.MaxBudgetMicros/1_000_000)
			}
			b.USDMicros = int64(math.Round(f * 1e6))
			if b.USDMicros == 0 {
				return b, errBudget
			}
			continue
		}
		l := strings.ToLower(p)
		num, ok := strings.CutSuffix(l, "tokens")
		if !ok {
			num, ok = strings.CutSuffix(l, "token")
		}
		if !ok || b.Tokens != 0 {
			return b, errBudget
		}
		num = strings.TrimSpace(num)
		mult := 1.0
		switch {
		case strings.HasSuffix(num, "k"):
			mult, num = 1e3, num[:len(num)-1]
		case strings.HasSuffix(num, "m"):
			mult, num = 1e6, num[:len(num)-1]
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || !(f > 0) {
			return b, errBudget
		}
		if f*mult > muster.MaxBudgetTokens {
			return b, fmt.Errorf("%g tokens is more than the cap of %d", f*mult, int64(muster.MaxBudgetTokens))
		}
		b.Tokens = int64(math.Round(f * mult))
		if b.Tokens == 0 {
			return b, errBudget
		}
	}
	return b, nil
}

var errBudget = fmt.Errorf(`want $N, N tokens (k and M allowed), or both: "$2, 200k tokens"`)

// ParseLoop reads a Loop value: "[max=N] CHECK", where CHECK is the
// command whose exit status 0 means the loop is resolved and N (1 to 5,
// default 3) bounds the check attempts. For example
// "Loop: max=4 go test ./parser/...".
func ParseLoop(s string) (*muster.LoopSpec, error) {
	s = strings.TrimSpace(s)
	l := &muster.LoopSpec{Max: DefaultLoopMax}
	if rest, ok := cutPrefixFold(s, "max="); ok {
		numEnd := strings.IndexAny(rest, " \t")
		if numEnd < 0 {
			numEnd = len(rest)
		}
		n, err := strconv.Atoi(rest[:numEnd])
		if err != nil || n < 1 || n > MaxLoopMax {
			return nil, fmt.Errorf("max must be a whole number from 1 to %d", MaxLoopMax)
		}
		l.Max = n
		s = strings.TrimSpace(rest[numEnd:])
	}
	if s == "" {
		return nil, fmt.Errorf(`want "[max=N] CHECK-COMMAND"`)
	}
	l.Check = s
	return l, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

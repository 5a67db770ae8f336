package planfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/owns"
)

// CanonicalVersion is the version of the canonical form that Canonical and
// Hash compute now. A run records the version it started with (in its
// TasksPlanned event) and its receipt the version it was sealed with, so
// that `muster verify` recomputes the hash the same way however muster
// has changed since.
//
// Version 1 spelt out every field, so a new plan key changed the hash of
// every plan; it is kept, frozen, for receipts sealed with it. Version 2
// leaves out every field at its zero value: a key added later changes
// nothing for plans that do not use it, and needs no new version. Bump
// the version only when the form of an existing field changes (and keep
// the old form beside the new one).
const CanonicalVersion = 2

// canonPlan is the canonical plan; Tasks holds canonTaskV1 or canonTask.
type canonPlan struct {
	V     int    `json:"v"`
	Title string `json:"title"`
	Brief string `json:"brief"`
	Tasks any    `json:"tasks"`
}

// canonTaskV1 is version 1, frozen: never add a field.
type canonTaskV1 struct {
	ID        string           `json:"id"`
	Title     string           `json:"title"`
	Done      bool             `json:"done"`
	After     []string         `json:"after"`
	Owns      []string         `json:"owns"`
	Reads     []string         `json:"reads"`
	Gates     []string         `json:"gates"`
	Executor  string           `json:"executor"`
	Role      string           `json:"role"`
	Kind      string           `json:"kind"`
	Run       string           `json:"run"`
	Satisfies []string         `json:"satisfies"`
	Timeout   int64            `json:"timeout_ns"`
	Retries   int              `json:"retries"`
	Review    string           `json:"review"`
	Authority string           `json:"authority"`
	Budget    muster.Budget    `json:"budget"`
	Delegates bool             `json:"delegates"`
	Loop      *muster.LoopSpec `json:"loop"`
	Prompt    string           `json:"prompt"`
	Parent    string           `json:"parent"`
}

// canonTask is the current version, built by canonTaskOf. Every field is
// omitempty: a new plan key is added here with omitempty (CONTRIBUTING.md,
// "A new plan key"), and TestCanonicalTaskHashCoversEveryField fails
// until it is.
type canonTask struct {
	ID        string         `json:"id"`
	Title     string         `json:"title,omitempty"`
	Done      bool           `json:"done,omitempty"`
	After     []string       `json:"after,omitempty"`
	Owns      []string       `json:"owns,omitempty"`
	Reads     []string       `json:"reads,omitempty"`
	Gates     []string       `json:"gates,omitempty"`
	Executor  string         `json:"executor,omitempty"`
	Model     string         `json:"model,omitempty"`
	Role      string         `json:"role,omitempty"`
	Kind      string         `json:"kind,omitempty"`
	Run       string         `json:"run,omitempty"`
	Satisfies []string       `json:"satisfies,omitempty"`
	Timeout   int64          `json:"timeout_ns,omitempty"`
	Retries   int            `json:"retries,omitempty"`
	Review    string         `json:"review,omitempty"`
	Authority string         `json:"authority,omitempty"`
	Budget    *muster.Budget `json:"budget,omitempty"`
	Delegates bool           `json:"delegates,omitempty"`
	// DelegateDepth is left out at 0 (Delegates: yes or no), so plans
	// written before Delegates: N hash as they did.
	DelegateDepth int              `json:"delegate_depth,omitempty"`
	Loop          *muster.LoopSpec `json:"loop,omitempty"`
	Prompt        string           `json:"prompt,omitempty"`
	Parent        string           `json:"parent,omitempty"`
	// Race, RaceFirst and Candidates are left out when unset, so plans
	// written before Race: hash as they did.
	Race       int      `json:"race,omitempty"`
	RaceFirst  bool     `json:"race_first,omitempty"`
	Candidates []string `json:"candidates,omitempty"`
}

// Canonical returns a form of the plan that does not depend on how it was
// written: Markdown or YAML, key order and case, spacing, defaults left
// out or spelt out. It is compact JSON: tasks in plan order (order sets
// priority ties); After, Owns, Reads and Satisfies sorted and without
// duplicates; Gates in order; Owns normalised; defaults (Kind agent,
// Authority write, Role coder) filled in. Source and line numbers are
// left out. It is version CanonicalVersion of the form.
func Canonical(p *muster.Plan) []byte {
	b, err := CanonicalAt(p, CanonicalVersion)
	if err != nil {
		// Only plain strings, numbers and bools: cannot happen.
		panic("planfile: canonical form: " + err.Error())
	}
	return b
}

// CanonicalAt returns version v of the canonical form; a version this
// muster does not know is an error.
func CanonicalAt(p *muster.Plan, v int) ([]byte, error) {
	c := canonPlan{V: v, Title: strings.TrimSpace(p.Title), Brief: canonText(p.Brief)}
	switch v {
	case 1:
		tasks := []canonTaskV1{}
		for _, t := range p.Tasks {
			if t != nil {
				tasks = append(tasks, canonOf(t))
			}
		}
		c.Tasks = tasks
	case 2:
		tasks := []canonTask{}
		for _, t := range p.Tasks {
			if t != nil {
				tasks = append(tasks, canonTaskOf(t))
			}
		}
		c.Tasks = tasks
	default:
		return nil, fmt.Errorf("canonical form version %d is not known to this muster (it knows 1 to %d)", v, CanonicalVersion)
	}
	return json.Marshal(c)
}

// canonTaskOf is the one place a muster.Task becomes its canonical form
// (version 2): a new plan key is added here and to canonTask, and
// TestCanonicalTaskHashCoversEveryField fails until it is.
func canonTaskOf(t *muster.Task) canonTask {
	return canonTask{
		ID:            string(t.ID),
		Title:         strings.TrimSpace(t.Title),
		Done:          t.Done,
		After:         sortedSet(idStrings(t.After)),
		Owns:          sortedSet(normOwns(t.Owns)),
		Reads:         sortedSet(t.Reads),
		Gates:         nonNil(t.Gates),
		Executor:      t.Executor,
		Model:         strings.TrimSpace(t.Model),
		Role:          string(t.EffectiveRole()),
		Kind:          t.EffectiveKind(),
		Run:           strings.TrimSpace(t.Run),
		Satisfies:     sortedSet(t.Satisfies),
		Timeout:       int64(t.Timeout),
		Retries:       t.Retries,
		Review:        strings.ToLower(t.Review),
		Authority:     string(t.EffectiveAuthority()),
		Budget:        nonZeroBudget(t.Budget),
		Delegates:     t.Delegates,
		DelegateDepth: canonDepth(t),
		Loop:          t.Loop,
		Prompt:        canonText(t.Prompt),
		Parent:        string(t.Parent),
		Race:          t.Race,
		RaceFirst:     t.RaceFirst,
		Candidates:    t.Candidates, // in order: the order is start order
	}
}

// canonOf is version 1's form, frozen.
func canonOf(t *muster.Task) canonTaskV1 {
	return canonTaskV1{
		ID:        string(t.ID),
		Title:     strings.TrimSpace(t.Title),
		Done:      t.Done,
		After:     sortedSet(idStrings(t.After)),
		Owns:      sortedSet(normOwns(t.Owns)),
		Reads:     sortedSet(t.Reads),
		Gates:     nonNil(t.Gates),
		Executor:  t.Executor,
		Role:      string(t.EffectiveRole()),
		Kind:      t.EffectiveKind(),
		Run:       strings.TrimSpace(t.Run),
		Satisfies: sortedSet(t.Satisfies),
		Timeout:   int64(t.Timeout),
		Retries:   t.Retries,
		Review:    strings.ToLower(t.Review),
		Authority: string(t.EffectiveAuthority()),
		Budget:    t.Budget,
		Delegates: t.Delegates,
		Loop:      t.Loop,
		Prompt:    canonText(t.Prompt),
		Parent:    string(t.Parent),
	}
}

func nonZeroBudget(b muster.Budget) *muster.Budget {
	if b == (muster.Budget{}) {
		return nil
	}
	return &b
}

// Hash returns the hex SHA-256 of Canonical(p). Equal plans hash equal
// however they are written; any change of content changes the hash.
func Hash(p *muster.Plan) string {
	sum := sha256.Sum256(Canonical(p))
	return hex.EncodeToString(sum[:])
}

// HashAt returns the hex SHA-256 of version v of the canonical form.
func HashAt(p *muster.Plan, v int) (string, error) {
	b, err := CanonicalAt(p, v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// canonText normalises line endings and drops blank lines at either end.
func canonText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return joinTrimmed(strings.Split(s, "\n"))
}

func idStrings(ids []muster.TaskID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

func normOwns(entries []string) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if n, err := owns.Normalize(e); err == nil {
			e = n
		}
		out = append(out, e)
	}
	return out
}

func sortedSet(s []string) []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		out = append(out, strings.TrimSpace(v))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// canonDepth is a task's Delegates: N when N is 2 or more, else 0 (yes
// and no hash as they did before the key took a number).
func canonDepth(t *muster.Task) int {
	if d := t.DelegationDepth(); d > 1 {
		return d
	}
	return 0
}

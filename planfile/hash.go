package planfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/owns"
)

// canonicalVersion changes whenever the canonical form does, so that old
// hashes never collide with new ones.
const canonicalVersion = 1

type canonPlan struct {
	V     int         `json:"v"`
	Title string      `json:"title"`
	Brief string      `json:"brief"`
	Tasks []canonTask `json:"tasks"`
}

type canonTask struct {
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

// Canonical returns a form of the plan that does not depend on how it was
// written: Markdown or YAML, key order and case, spacing, defaults left
// out or spelt out. It is compact JSON: tasks in plan order (order sets
// priority ties); After, Owns, Reads and Satisfies sorted and without
// duplicates; Gates in order; Owns normalised; defaults (Kind agent,
// Authority write, Role coder) filled in. Source and line numbers are
// left out.
func Canonical(p *muster.Plan) []byte {
	c := canonPlan{V: canonicalVersion, Title: strings.TrimSpace(p.Title), Brief: canonText(p.Brief), Tasks: []canonTask{}}
	for _, t := range p.Tasks {
		if t == nil {
			continue
		}
		ct := canonTask{
			ID:        string(t.ID),
			Title:     strings.TrimSpace(t.Title),
			Done:      t.Done,
			After:     sortedSet(idStrings(t.After)),
			Owns:      sortedSet(normOwns(t.Owns)),
			Reads:     sortedSet(t.Reads),
			Gates:     nonNil(t.Gates),
			Executor:  t.Executor,
			Role:      t.EffectiveRole(),
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
		c.Tasks = append(c.Tasks, ct)
	}
	b, err := json.Marshal(c)
	if err != nil {
		// Only plain strings, numbers and bools: cannot happen.
		panic("planfile: canonical form: " + err.Error())
	}
	return b
}

// Hash returns the hex SHA-256 of Canonical(p). Equal plans hash equal
// however they are written; any change of content changes the hash.
func Hash(p *muster.Plan) string {
	sum := sha256.Sum256(Canonical(p))
	return hex.EncodeToString(sum[:])
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

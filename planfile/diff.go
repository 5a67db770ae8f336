package planfile

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/muster-run/muster"
)

// canonKeyNames maps a field of the canonical form to the key people
// write in a plan, where the two differ; any other field is the plan key
// of the same name (KeySpecs), or its own name.
var canonKeyNames = map[string]string{
	"title":          "title",
	"prompt":         "prompt",
	"done":           "[x]",
	"gates":          "Gate",
	"timeout_ns":     "Timeout",
	"delegate_depth": "Delegates",
	"parent":         "parent",
	"race_first":     "Race",
	"candidates":     "Executor",
}

// TaskChanges names the fields in which two versions of a task differ,
// in their canonical form (so spelling, key order and spacing are no
// change): "title", "prompt", "[x]", or the plan key ("Owns", "Gate",
// "After", ...), sorted, each once. None: the task is the same.
func TaskChanges(old, cur *muster.Task) []string {
	a, b := canonFields(old), canonFields(cur)
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	var out []string
	names := map[string]bool{}
	for k := range seen {
		if bytes.Equal(a[k], b[k]) {
			continue
		}
		n := keyName(k)
		if !names[n] {
			names[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// BriefChanged reports whether two versions of a plan differ in their
// title or brief (what every prompt starts with).
func BriefChanged(old, cur *muster.Plan) bool {
	return strings.TrimSpace(old.Title) != strings.TrimSpace(cur.Title) || canonText(old.Brief) != canonText(cur.Brief)
}

func canonFields(t *muster.Task) map[string]json.RawMessage {
	b, err := json.Marshal(canonTaskOf(t))
	if err != nil {
		panic("planfile: canonical task: " + err.Error()) // plain strings, numbers and bools only
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		panic("planfile: canonical task: " + err.Error())
	}
	delete(m, "id")
	return m
}

func keyName(field string) string {
	if n, ok := canonKeyNames[field]; ok {
		return n
	}
	if s, ok := keySpec(field); ok {
		return s.Name
	}
	return field
}

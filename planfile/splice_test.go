package planfile

import (
	"reflect"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func TestSplice(t *testing.T) {
	t.Parallel()
	plan := mustParse(t, "plan.md", "## [ ] plan: P\nOwns: parser/\nDelegates: yes\n")
	frag := mustParse(t, "out.md", "## [ ] p1: One\nOwns: parser/a.go\n\n## [ ] p2: Two\nOwns: parser/b.go\nAfter: p1, plan\n")
	got := Splice(plan.Tasks[0], frag)
	if len(got) != 2 {
		t.Fatalf("%d tasks", len(got))
	}
	if got[0].Parent != "plan" || !reflect.DeepEqual(got[0].After, []muster.TaskID{"plan"}) {
		t.Errorf("p1: %+v", got[0])
	}
	if !reflect.DeepEqual(got[1].After, []muster.TaskID{"p1", "plan"}) {
		t.Errorf("p2 after: %v", got[1].After)
	}
	// Copies: the fragment is unchanged.
	if frag.Tasks[0].Parent != "" || len(frag.Tasks[0].After) != 0 {
		t.Errorf("fragment changed: %+v", frag.Tasks[0])
	}
	// The grown plan is still valid.
	plan.Tasks = append(plan.Tasks, got...)
	if probs := Validate(plan, nil, Options{Strict: true}); len(probs) != 0 {
		t.Errorf("grown plan: %v", probs)
	}
}

// A delegated task inherits the delegator's Timeout and Budget when it
// sets none, and keeps a lower one of its own.
func TestSpliceInheritsLimits(t *testing.T) {
	t.Parallel()
	plan := mustParse(t, "plan.md", "## [ ] plan: P\nDelegates: yes\nTimeout: 30m\nBudget: $3, 100k tokens\n")
	frag := mustParse(t, "out.md", "## [ ] p1: One\n\n## [ ] p2: Two\nTimeout: 5m\nBudget: $1\n")
	got := Splice(plan.Tasks[0], frag)
	if got[0].Timeout != 30*time.Minute || got[0].Budget != (muster.Budget{USDMicros: 3_000_000, Tokens: 100_000}) {
		t.Errorf("p1 limits: %v %+v", got[0].Timeout, got[0].Budget)
	}
	if got[1].Timeout != 5*time.Minute || got[1].Budget != (muster.Budget{USDMicros: 1_000_000, Tokens: 100_000}) {
		t.Errorf("p2 limits: %v %+v", got[1].Timeout, got[1].Budget)
	}
}

package planfile

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func TestTaskChangesNamesEachKey(t *testing.T) {
	old := &muster.Task{ID: "a", Title: "A", Owns: []string{"a.go"}, Prompt: "do it", Gates: []string{"go test"}}
	same := &muster.Task{ID: "a", Title: " A ", Owns: []string{"./a.go"}, Prompt: "do it\n\n", Gates: []string{"go test"}, Line: 9}
	if got := TaskChanges(old, same); len(got) != 0 {
		t.Fatalf("same task written differently: %v", got)
	}
	cur := &muster.Task{ID: "a", Title: "A2", Owns: []string{"a.go", "b.go"}, Prompt: "do it well", Gates: []string{"go vet"},
		Timeout: time.Minute, After: []muster.TaskID{"z"}, Budget: muster.Budget{Tokens: 5}, Executor: "x", Done: true, Delegates: true, DelegateDepth: 3}
	want := []string{"After", "Budget", "Delegates", "Executor", "Gate", "Owns", "Timeout", "[x]", "prompt", "title"}
	if got := TaskChanges(old, cur); !slices.Equal(got, want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	// Every field of the canonical form is named as a plan key, "title",
	// "prompt", "[x]" or "parent" (a new key needs no row when its field
	// is named as the key; else a row in canonKeyNames).
	ct := reflect.TypeFor[canonTask]()
	for i := range ct.NumField() {
		f, _, _ := strings.Cut(ct.Field(i).Tag.Get("json"), ",")
		if f == "id" {
			continue
		}
		n := keyName(f)
		if _, ok := keySpec(n); !ok && !slices.Contains([]string{"title", "prompt", "[x]", "parent"}, n) {
			t.Errorf("canonical field %q is shown as %q, which is no plan key: add it to canonKeyNames", f, n)
		}
	}
}

package planfile

import (
	"strings"
	"testing"
)

// sampleValue is a valid value for each key, so that every row of
// KeySpecs can be exercised; a new key without one fails
// TestEveryKeyParses.
var sampleValue = map[string]string{
	"After": "-", "Owns": "out/x/", "Reads": "README.md", "Gate": "true", "Executor": "", "Model": "m-1", "Role": "coder",
	"Kind": "agent", "Run": "true", "Satisfies": "1", "Timeout": "5m", "Retries": "1", "Review": "none",
	"Authority": "write", "Budget": "$1", "Delegates": "no", "Loop": "true", "Race": "2",
}

// TestEveryKeyParses: each key of the table is understood by the Markdown
// and the YAML readers (neither calls it unknown).
func TestEveryKeyParses(t *testing.T) {
	t.Parallel()
	for _, k := range KeySpecs {
		v, ok := sampleValue[k.Name]
		if !ok {
			t.Errorf("key %s: no sample value in fields_test.go", k.Name)
			continue
		}
		if v == "" {
			continue // needs a crew to be valid; parsed elsewhere
		}
		for _, src := range []struct{ file, text string }{
			{"p.md", "## [ ] a: A\n" + k.Name + ": " + v + "\n"},
			{"p.yaml", "tasks:\n- id: a\n  title: A\n  " + strings.ToLower(k.Name) + ": \"" + v + "\"\n"},
		} {
			p, err := Parse(src.file, []byte(src.text))
			if err != nil && strings.Contains(err.Error(), "unknown key") {
				t.Errorf("%s: key %s: %v", src.file, k.Name, err)
			}
			_ = p
		}
	}
}

// TestCommandKeysNeedShell: a fragment from a delegator without shell
// authority may not use any key the table marks as a command.
func TestCommandKeysNeedShell(t *testing.T) {
	t.Parallel()
	plan := mustParse(t, "plan.md", "## [ ] plan: P\nOwns: out/\nDelegates: yes\n")
	n := 0
	for _, k := range KeySpecs {
		if !k.Command {
			continue
		}
		n++
		frag := mustParse(t, "out.md", "## [ ] c: C\nOwns: out/x/\n"+k.Name+": "+sampleValue[k.Name]+"\n")
		probs := ValidateFragment(plan.Tasks[0], plan, frag, nil, 0)
		if !strings.Contains(probs.Error(), k.Name+" is a command") {
			t.Errorf("key %s in a fragment of a write task: %v", k.Name, probs)
		}
	}
	if n == 0 {
		t.Fatal("no command keys")
	}
}

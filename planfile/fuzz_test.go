package planfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to both formats. Parse must not panic
// (Parse recovers, so a panic shows up as a problem we fail on), must
// keep every line inside the file, and the checks and the hash must cope
// with whatever it returns.
func FuzzParse(f *testing.F) {
	samples, _ := filepath.Glob("testdata/*.*")
	for _, s := range samples {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(IsYAML(s), b)
		}
	}
	f.Fuzz(func(t *testing.T, yaml bool, data []byte) {
		fuzzBody(t, yaml, data)
	})
}

func fuzzBody(t *testing.T, yaml bool, data []byte) {
	name := "f.md"
	if yaml {
		name = "f.yaml"
	}
	p, probs := Parse(name, data)
	if p == nil {
		t.Fatal("nil plan")
	}
	lines := 1
	for i, c := range data {
		// YAML also breaks lines at a lone CR.
		if c == '\n' || (yaml && c == '\r' && (i+1 == len(data) || data[i+1] != '\n')) {
			lines++
		}
	}
	for _, pr := range probs {
		if strings.HasPrefix(pr.Message, "cannot read the plan: ") {
			t.Fatalf("panic: %s", pr.Message)
		}
		if pr.Line < 0 || pr.Line > lines || pr.File != name {
			t.Fatalf("problem out of the file: %v", pr)
		}
	}
	for _, tk := range p.Tasks {
		if tk == nil || tk.Line < 1 || tk.Line > lines {
			t.Fatalf("task line out of the file: %+v", tk)
		}
	}
	Validate(p, crew(), Options{Strict: true})
	if h := Hash(p); h != Hash(p) {
		t.Fatal("hash not deterministic")
	}
	if len(p.Tasks) > 0 {
		ValidateFragment(p.Tasks[0], p, p, crew(), 3)
	}
}

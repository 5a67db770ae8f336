package planfile

import (
	"fmt"
	"strings"
	"testing"
)

// genPlan writes a Markdown plan of n tasks, each depending on up to
// three earlier ones and owning its own file plus a shared directory for
// every tenth task.
func genPlan(n int) []byte {
	var b strings.Builder
	b.WriteString("# Plan: generated\n\nA generated plan.\n\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "## [ ] t%d: Task %d\n", i, i)
		var deps []string
		for _, d := range []int{i - 1, i - 7, i - 31} {
			if d >= 0 && i%3 != 0 {
				deps = append(deps, fmt.Sprintf("t%d", d))
			}
		}
		if len(deps) > 0 {
			fmt.Fprintf(&b, "After: %s\n", strings.Join(deps, ", "))
		}
		fmt.Fprintf(&b, "Owns: pkg%d/file%d.go", i%50, i)
		if i%10 == 0 {
			fmt.Fprintf(&b, ", shared%d/", i%7)
		}
		b.WriteString("\nGate: go test ./...\nTimeout: 20m\n\nDo the work of this task.\nIn two lines.\n\n")
	}
	return []byte(b.String())
}

func BenchmarkParse2000(b *testing.B) {
	data := genPlan(2000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, probs := Parse("gen.md", data); len(probs) != 0 {
			b.Fatal(probs[0])
		}
	}
}

func BenchmarkValidate2000(b *testing.B) {
	p, _ := Parse("gen.md", genPlan(2000))
	cfg := crew()
	for b.Loop() {
		Validate(p, cfg, Options{})
	}
}

func BenchmarkHash2000(b *testing.B) {
	p, _ := Parse("gen.md", genPlan(2000))
	for b.Loop() {
		Hash(p)
	}
}

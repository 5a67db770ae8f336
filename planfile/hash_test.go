package planfile

import (
	"regexp"
	"testing"
)

func TestHashIgnoresFormatting(t *testing.T) {
	t.Parallel()
	base := "# Plan: p\n\nBrief.\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\n\nDo it.\n\n## [ ] b: B\nAfter: a\n"
	same := []struct{ name, file, src string }{
		{"crlf and spacing", "p.md", "# Plan:   p  \r\n\r\n\r\nBrief.\r\n\r\n##   [ ]   a :  A  \r\nowns:   y/ ,x.go,\r\nGATE: make\r\n\r\n\r\nDo it.\r\n\r\n\r\n## [ ] b: B\r\nAfter: a, a\r\nKind: agent\r\nAuthority: write\r\n"},
		{"key order and repeats", "p.md", "# Plan: p\n\nBrief.\n\n## [ ] a: A\nGate: make\nOwns: y/\nOwns: ./x.go\n\nDo it.\n\n## [ ] b: B\nRole: coder\nAfter: -\nAfter: a\n"},
		{"yaml", "p.yaml", "tasks:\n- id: a\n  title: A\n  owns: [y/, x.go]\n  gate: make\n  prompt: \"Do it.\\n\"\n- {id: b, title: B, after: a}\nbrief: Brief.\ntitle: p\n"},
	}
	want := Hash(mustParse(t, "p.md", base))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(want) {
		t.Fatalf("hash %q", want)
	}
	for _, s := range same {
		if got := Hash(mustParse(t, s.file, s.src)); got != want {
			t.Errorf("%s: hash differs\n%s\n%s", s.name, Canonical(mustParse(t, "p.md", base)), Canonical(mustParse(t, s.file, s.src)))
		}
	}
	differ := []string{
		"# Plan: q\n\nBrief.\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\n\nDo it.\n\n## [ ] b: B\nAfter: a\n",
		"# Plan: p\n\nBrief!\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\n\nDo it.\n\n## [ ] b: B\nAfter: a\n",
		"# Plan: p\n\nBrief.\n\n## [x] a: A\nOwns: x.go, y/\nGate: make\n\nDo it.\n\n## [ ] b: B\nAfter: a\n",
		"# Plan: p\n\nBrief.\n\n## [ ] a: A\nOwns: x.go\nGate: make\n\nDo it.\n\n## [ ] b: B\nAfter: a\n",
		"# Plan: p\n\nBrief.\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\nGate: lint\n\nDo it.\n\n## [ ] b: B\nAfter: a\n",
		"# Plan: p\n\nBrief.\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\n\nDo it now.\n\n## [ ] b: B\nAfter: a\n",
		"# Plan: p\n\nBrief.\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\n\nDo it.\n\n## [ ] b: B\n",
		"# Plan: p\n\nBrief.\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\nTimeout: 5m\n\nDo it.\n\n## [ ] b: B\nAfter: a\n",
		"# Plan: p\n\nBrief.\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\nBudget: $1\n\nDo it.\n\n## [ ] b: B\nAfter: a\n",
		"# Plan: p\n\nBrief.\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\nLoop: make check\n\nDo it.\n\n## [ ] b: B\nAfter: a\n",
		"# Plan: p\n\nBrief.\n\n## [ ] b: B\nAfter: a\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\n\nDo it.\n",
	}
	seen := map[string]int{want: -1}
	for i, src := range differ {
		h := Hash(mustParse(t, "p.md", src))
		if j, dup := seen[h]; dup {
			t.Errorf("variant %d hashes like %d", i, j)
		}
		seen[h] = i
	}
}

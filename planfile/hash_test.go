package planfile

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/muster-run/muster"
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

// pinnedPlan and its hashes are frozen: a hash that changes breaks every
// receipt sealed with that version of the canonical form.
const pinnedPlan = "# Plan: p\n\nBrief.\n\n## [ ] a: A\nOwns: x.go, y/\nGate: make\nBudget: $1\n\nDo it.\n\n## [ ] b: B\nAfter: a\nReview: none\n"

func TestHashVersionsArePinned(t *testing.T) {
	t.Parallel()
	p := mustParse(t, "p.md", pinnedPlan)
	for v, want := range map[int]string{
		1: "d02d4163ecbf1dc5e6cf0fb5dda437df5dc68c152390e174d5da2e43f1f16d48", // sealed by muster 0.1
		// Version 2 before the Model key: a plan without Model: hashes as
		// it did, so receipts sealed before the key still verify.
		2: "98061bd3f37fdd9acecb7a53d8e1f897c3756c86d5e75d1d8f353ba6aa6017ef",
	} {
		got, err := HashAt(p, v)
		if err != nil || got != want {
			t.Errorf("version %d: hash %s, %v; want %s (a frozen form changed: old receipts no longer verify)", v, got, err, want)
		}
	}
	if cur, _ := HashAt(p, CanonicalVersion); cur != Hash(p) {
		t.Errorf("Hash is not HashAt(CanonicalVersion)")
	}
	if _, err := HashAt(p, CanonicalVersion+1); err == nil {
		t.Errorf("an unknown version hashed")
	}
}

// TestCanonicalLeavesOutZeroFields: in the current form a field at its
// zero value is not written, so a plan key added later (with omitempty)
// leaves the hash of every plan that does not use it as it was.
func TestCanonicalLeavesOutZeroFields(t *testing.T) {
	t.Parallel()
	got := string(Canonical(mustParse(t, "p.md", "# Plan: p\n\n## [ ] a: A\n")))
	want := `{"v":2,"title":"p","brief":"","tasks":[{"id":"a","title":"A","role":"coder","kind":"agent","authority":"write"}]}`
	if got != want {
		t.Errorf("canonical form\n got %s\nwant %s", got, want)
	}
}

// TestCanonicalCoversTask fails when muster.Task gains a field that the
// canonical form does not hash: a plan could then change without its
// hash (and a sealed receipt) noticing. Add the field to canonTask with
// omitempty, or to notContent if it is not part of what a plan says.
func TestCanonicalCoversTask(t *testing.T) {
	t.Parallel()
	notContent := map[string]bool{"Line": true, "KeyLines": true, "ItemLines": true}
	have := map[string]bool{}
	ct := reflect.TypeFor[canonTask]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		have[f.Name] = true
		if tag := f.Tag.Get("json"); f.Name != "ID" && !strings.HasSuffix(tag, ",omitempty") {
			t.Errorf("canonTask.%s: json tag %q lacks omitempty", f.Name, tag)
		}
	}
	tt := reflect.TypeFor[muster.Task]()
	for i := range tt.NumField() {
		if n := tt.Field(i).Name; !have[n] && !notContent[n] {
			t.Errorf("muster.Task.%s is not in the canonical form (planfile/hash.go canonTask)", n)
		}
	}
}

// TestModelChangesTheHash: the Model key is content (a plan that asks for
// another model is another plan), and only where it is used.
func TestModelChangesTheHash(t *testing.T) {
	t.Parallel()
	base := mustParse(t, "p.md", pinnedPlan)
	withModel := mustParse(t, "p.md", pinnedPlan)
	withModel.Tasks[0].Model = "claude-opus-4-5"
	if Hash(base) == Hash(withModel) {
		t.Error("a Model: did not change the hash")
	}
	if !strings.Contains(string(Canonical(withModel)), `"model":"claude-opus-4-5"`) {
		t.Errorf("canonical form without the model: %s", Canonical(withModel))
	}
}

// TestDelegatesDepthHash: Delegates: 1 is yes and hashes as it always
// did; a depth above 1 is content.
func TestDelegatesDepthHash(t *testing.T) {
	t.Parallel()
	yes := mustParse(t, "p.md", "## [ ] a: A\nDelegates: yes\n")
	one := mustParse(t, "p.md", "## [ ] a: A\nDelegates: 1\n")
	two := mustParse(t, "p.md", "## [ ] a: A\nDelegates: 2\n")
	no := mustParse(t, "p.md", "## [ ] a: A\nDelegates: 0\n")
	none := mustParse(t, "p.md", "## [ ] a: A\n")
	if Hash(yes) != Hash(one) || Hash(no) != Hash(none) || Hash(two) == Hash(yes) {
		t.Errorf("yes %s one %s two %s", Hash(yes), Hash(one), Hash(two))
	}
	if strings.Contains(string(Canonical(yes)), "delegate_depth") || !strings.Contains(string(Canonical(two)), `"delegate_depth":2`) {
		t.Errorf("canonical: %s / %s", Canonical(yes), Canonical(two))
	}
}

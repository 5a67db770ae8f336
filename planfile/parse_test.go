package planfile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func problemStrings(ps muster.Problems) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseMarkdownSample(t *testing.T) {
	t.Parallel()
	p, probs := Parse("health.md", mustRead(t, "testdata/health.md"))
	if len(probs) != 0 {
		t.Fatalf("problems: %v", probs)
	}
	if p.Title != "health-endpoint" || p.Source != "health.md" {
		t.Errorf("title %q source %q", p.Title, p.Source)
	}
	if p.Brief != "Everything before the first task is the brief, given to every task." {
		t.Errorf("brief %q", p.Brief)
	}
	if len(p.Tasks) != 4 {
		t.Fatalf("got %d tasks", len(p.Tasks))
	}
	api, route, docs, scaffold := p.Tasks[0], p.Tasks[1], p.Tasks[2], p.Tasks[3]
	want := &muster.Task{
		ID: "api", Title: "Add the /healthz handler",
		Owns:      []string{"internal/http/health.go", "internal/http/health_test.go"},
		Gates:     []string{"go test ./internal/http/..."},
		Satisfies: []string{"1", "2"},
		Prompt:    "Write a handler that returns 200 and the build version as JSON.",
		Line:      5,
		KeyLines:  map[string]int{"after": 6, "owns": 7, "gate": 8, "satisfies": 9},
		ItemLines: map[string][]int{"owns": {7, 7}, "gate": {8}, "satisfies": {9, 9}},
	}
	if !reflect.DeepEqual(api, want) {
		t.Errorf("api:\n got %+v\nwant %+v", api, want)
	}
	if route.Executor != "codex" || route.Timeout != 20*time.Minute || route.Retries != 2 ||
		!reflect.DeepEqual(route.After, []muster.TaskID{"api"}) || route.Line != 13 || route.LineOf("timeout") != 17 {
		t.Errorf("route: %+v", route)
	}
	if docs.Authority != muster.AuthorityRead || docs.Review != "none" ||
		docs.Budget != (muster.Budget{USDMicros: 500000, Tokens: 200000}) ||
		!reflect.DeepEqual(docs.After, []muster.TaskID{"api", "route"}) || !reflect.DeepEqual(docs.Owns, []string{"docs/health.md"}) {
		t.Errorf("docs (keys in any case): %+v", docs)
	}
	if !scaffold.Done || scaffold.Kind != muster.KindCode || scaffold.Run != "mkdir -p internal/http" || scaffold.Prompt != "" {
		t.Errorf("scaffold: %+v", scaffold)
	}
}

func TestParseYAMLSampleHashesLikeMarkdown(t *testing.T) {
	t.Parallel()
	md, probs := Parse("health.md", mustRead(t, "testdata/health.md"))
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	y, probs := Parse("health.yaml", mustRead(t, "testdata/health.yaml"))
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	if string(Canonical(md)) != string(Canonical(y)) {
		t.Fatalf("canonical forms differ:\n%s\n%s", Canonical(md), Canonical(y))
	}
	if y.Tasks[1].Line != 13 || y.Tasks[1].LineOf("executor") != 17 || y.Tasks[2].LineOf("owns") != 24 {
		t.Errorf("YAML lines: route %d executor %d docs owns %d", y.Tasks[1].Line, y.Tasks[1].LineOf("executor"), y.Tasks[2].LineOf("owns"))
	}
}

func TestParseMarkdownStructure(t *testing.T) {
	t.Parallel()
	src := "\ufeffBrief line one.\r\n\r\n## Context\r\nstill brief\r\n" +
		"## [X] a: First: with colon\r\n" +
		"Gate: make test, lint\r\n" +
		"Gate: go vet ./...\r\n" +
		"Owns: a/\r\n" +
		"Owns: b.go, c.go\r\n" +
		"\r\n" +
		"Prompt line.\r\n" +
		"```\r\n## [ ] fenced: not a task\r\n```\r\n" +
		"Owns: in the prompt, not a field\r\n" +
		"##  [ ]  b :  Second \n" +
		"Not a field: starts the prompt\n" +
		"Loop: ignored, in the prompt\n"
	p, probs := Parse("x.md", []byte(src))
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	if p.Title != "" || p.Brief != "Brief line one.\n\n## Context\nstill brief" {
		t.Errorf("title %q brief %q", p.Title, p.Brief)
	}
	if len(p.Tasks) != 2 {
		t.Fatalf("tasks: %d", len(p.Tasks))
	}
	a, b := p.Tasks[0], p.Tasks[1]
	if !a.Done || a.Title != "First: with colon" ||
		!reflect.DeepEqual(a.Gates, []string{"make test, lint", "go vet ./..."}) ||
		!reflect.DeepEqual(a.Owns, []string{"a/", "b.go", "c.go"}) || a.LineOf("owns") != 8 {
		t.Errorf("a: %+v", a)
	}
	if a.Prompt != "Prompt line.\n```\n## [ ] fenced: not a task\n```\nOwns: in the prompt, not a field" {
		t.Errorf("a prompt %q", a.Prompt)
	}
	if b.ID != "b" || b.Title != "Second" || b.Line != 16 || b.Loop != nil ||
		b.Prompt != "Not a field: starts the prompt\nLoop: ignored, in the prompt" {
		t.Errorf("b: %+v", b)
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		field string
		check func(*muster.Task) bool
	}{
		{"Timeout: 1h30m", func(t *muster.Task) bool { return t.Timeout == 90*time.Minute }},
		{"Retries: 0", func(t *muster.Task) bool { return t.Retries == 0 && t.KeyLines["retries"] == 2 }},
		{"Authority: SHELL", func(t *muster.Task) bool { return t.Authority == muster.AuthorityShell }},
		{"Kind: Code", func(t *muster.Task) bool { return t.Kind == muster.KindCode }},
		{"Review:", func(t *muster.Task) bool { return t.Review == "" }},
		{"Budget: $2", func(t *muster.Task) bool { return t.Budget == muster.Budget{USDMicros: 2_000_000} }},
		{"Budget: 1.5M tokens", func(t *muster.Task) bool { return t.Budget == muster.Budget{Tokens: 1_500_000} }},
		{"Budget: 5000 tokens, $0.25", func(t *muster.Task) bool { return t.Budget == muster.Budget{USDMicros: 250_000, Tokens: 5000} }},
		{"Delegates: yes", func(t *muster.Task) bool { return t.Delegates }},
		{"Delegates: False", func(t *muster.Task) bool { return !t.Delegates }},
		{"Loop: go test ./x", func(t *muster.Task) bool { return *t.Loop == muster.LoopSpec{Check: "go test ./x", Max: 3} }},
		{"Loop: MAX=5 make check", func(t *muster.Task) bool { return *t.Loop == muster.LoopSpec{Check: "make check", Max: 5} }},
		{"After: a,, b ,-", func(t *muster.Task) bool { return reflect.DeepEqual(t.After, []muster.TaskID{"a", "b"}) }},
		{"Role: reviewer", func(t *muster.Task) bool { return t.Role == "reviewer" }},
		{"Reads: x.go, y/", func(t *muster.Task) bool { return reflect.DeepEqual(t.Reads, []string{"x.go", "y/"}) }},
	} {
		p, probs := Parse("v.md", []byte("## [ ] t: T\n"+tc.field+"\n"))
		if len(probs) != 0 || len(p.Tasks) != 1 {
			t.Errorf("%s: problems %v", tc.field, probs)
			continue
		}
		if !tc.check(p.Tasks[0]) {
			t.Errorf("%s: got %+v", tc.field, p.Tasks[0])
		}
	}
}

func TestParseProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, src string
		want            []string
	}{
		{"unknown key", "p.md", "## [ ] a: A\nOwms: x\n", []string{`p.md:2: unknown key "Owms"; did you mean "Owns"?`}},
		{"unknown key far", "p.md", "## [ ] a: A\nColour: x\n", []string{`p.md:2: unknown key "Colour"`}},
		{"duplicate scalar", "p.md", "## [ ] a: A\nExecutor: x\nexecutor: y\n", []string{`p.md:3: duplicate key Executor (first on line 2)`}},
		{"timeout", "p.md", "## [ ] a: A\nTimeout: 20x\n", []string{`p.md:2: bad Timeout "20x": want a duration such as 20m or 1h30m`}},
		{"negative timeout", "p.md", "## [ ] a: A\nTimeout: -5m\n", []string{`p.md:2: bad Timeout "-5m": want a duration such as 20m or 1h30m`}},
		{"retries", "p.md", "## [ ] a: A\nRetries: -1\n", []string{`p.md:2: bad Retries "-1": want a whole number, 0 or more`}},
		{"authority", "p.md", "## [ ] a: A\nAuthority: root\n", []string{`p.md:2: bad Authority "root": want read, write or shell`}},
		{"kind", "p.md", "## [ ] a: A\nKind: robot\n", []string{`p.md:2: bad Kind "robot": want agent or code`}},
		{"review", "p.md", "## [ ] a: A\nReview: twice\n", []string{`p.md:2: bad Review "twice": want none (or leave the key out)`}},
		{"budget", "p.md", "## [ ] a: A\nBudget: 2 dollars\n", []string{`p.md:2: bad Budget "2 dollars": want $N, N tokens (k and M allowed), or both: "$2, 200k tokens"`}},
		{"budget zero", "p.md", "## [ ] a: A\nBudget: $0\n", []string{`p.md:2: bad Budget "$0": want $N, N tokens (k and M allowed), or both: "$2, 200k tokens"`}},
		{"budget twice", "p.md", "## [ ] a: A\nBudget: $1, $2\n", []string{`p.md:2: bad Budget "$1, $2": want $N, N tokens (k and M allowed), or both: "$2, 200k tokens"`}},
		{"delegates", "p.md", "## [ ] a: A\nDelegates: maybe\n", []string{`p.md:2: bad Delegates "maybe": want yes, no or the levels of delegation, 0 to 5 (the cap)`}},
		{"delegates over the cap", "p.md", "## [ ] a: A\nDelegates: 6\n", []string{`p.md:2: bad Delegates "6": want yes, no or the levels of delegation, 0 to 5 (the cap)`}},
		{"loop max", "p.md", "## [ ] a: A\nLoop: max=9 make\n", []string{`p.md:2: bad Loop "max=9 make": max must be a whole number from 1 to 5`}},
		{"loop empty", "p.md", "## [ ] a: A\nLoop: max=2\n", []string{`p.md:2: bad Loop "max=2": want "[max=N] CHECK-COMMAND"`}},
		{"empty value", "p.md", "## [ ] a: A\nGate:\nRun:  \n", []string{`p.md:2: Gate needs a value`, `p.md:3: Run needs a value`}},
		{"bad checkbox", "p.md", "## [?] a: A\nOwns: x\n", []string{`p.md:1: bad task heading: want "## [ ] ID: Title" (or "[x]" for a task already done)`}},
		{"no id", "p.md", "## [ ] : A\n", []string{`p.md:1: task heading has no ID: want "## [ ] ID: Title"`}},
		{"no title", "p.md", "## [ ] a\n", []string{`p.md:1: task a has no title: want "## [ ] a: Title"`}},
		{"no colon", "p.md", "## [ ] fix login page\n", []string{`p.md:1: task heading has no ":" after its ID: want "## [ ] fix: login page"`}},
		{"not utf8", "p.md", "## [ ] a: A\n\xff\n", []string{`p.md:2: not UTF-8 text`}},
		// The plan's title is a pull request's title (muster pr): plain
		// text, as a task's title is.
		{"escape in plan title", "p.md", "# Plan: evil \x1b[31mred\n\n## [ ] a: A\n", []string{`p.md:1: the plan's title holds a control character (such as NUL, an escape or a bidirectional override); write it as plain text`}},
		{"bidi in yaml title", "p.yaml", "title: \"a\u202eb\"\ntasks:\n  - id: a\n    title: A\n", []string{`p.yaml:1: the plan's title holds a control character (such as NUL, an escape or a bidirectional override); write it as plain text`}},
		{"yaml syntax", "p.yaml", "tasks:\n  - id: a\n   title: [\n", []string{`p.yaml:3: bad YAML: value is not allowed in this context`}},
		{"yaml not a mapping", "p.yml", "- a\n- b\n", []string{`p.yml:1: the plan: want a mapping of keys to values`}},
		{"yaml unknown plan key", "p.yaml", "title: x\ntask: []\n", []string{`p.yaml:2: unknown key "task"; did you mean "tasks"?`}},
		{"yaml tasks not list", "p.yaml", "tasks: 3\n", []string{`p.yaml:1: tasks: want a list of tasks`}},
		{"yaml unknown task key", "p.yaml", "tasks:\n  - id: a\n    title: A\n    gates: [x]\n", []string{`p.yaml:4: unknown key "gates"; did you mean "gate"?`}},
		{"yaml no id", "p.yaml", "tasks:\n  - title: A\n", []string{`p.yaml:2: task has no id`}},
		{"yaml no title", "p.yaml", "tasks:\n  - id: a\n", []string{`p.yaml:2: task a has no title`}},
		{"yaml duplicate key", "p.yaml", "tasks:\n  - id: a\n    title: A\n    id: b\n", []string{`p.yaml:4: bad YAML: mapping key "id" already defined at [2:5]`}},
		{"yaml list for scalar", "p.yaml", "tasks:\n  - id: a\n    title: A\n    model: [x, y]\n", []string{`p.yaml:4: model: want a single value, not a list`}},
		{"yaml bad value", "p.yaml", "tasks:\n  - id: a\n    title: A\n    retries: many\n", []string{`p.yaml:4: bad Retries "many": want a whole number, 0 or more`}},
		{"yaml bad done", "p.yaml", "tasks:\n  - id: a\n    title: A\n    done: perhaps\n", []string{`p.yaml:4: bad done "perhaps": want true or false`}},
		{"yaml mapping value", "p.yaml", "tasks:\n  - id: a\n    title: {x: 1}\n", []string{`p.yaml:2: task a has no title`, `p.yaml:3: title: want a single value`}},
		{"yaml alias", "p.yaml", "x: &a 1\ntitle: *a\n", []string{`p.yaml:1: unknown key "x"`, `p.yaml:2: YAML aliases are not supported in plans`}},
		{"yaml loop map", "p.yaml", "tasks:\n  - id: a\n    title: A\n    loop: {check: make, max: 7, tries: 1}\n", []string{`p.yaml:4: unknown key "tries"`, `p.yaml:4: bad Loop "max=7 make": max must be a whole number from 1 to 5`}},
		{"yaml two documents", "p.yaml", "title: a\n---\ntitle: b\n", []string{`p.yaml:3: bad YAML: want one document, found 2`}},
	} {
		_, probs := Parse(tc.file, []byte(tc.src))
		if got := problemStrings(probs); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestParseYAMLForms(t *testing.T) {
	t.Parallel()
	src := `title: t
tasks:
  - id: a
    title: A
    done: yes
    loop:
      check: go test ./...
      max: 2
    prompt: |

      Line one.
      Line two.

  - id: b
    title: B
    after: []
    gate: ["make x, y", make z]
    budget: 200k tokens
    timeout: 1h
    delegates: true
`
	p, probs := Parse("f.yml", []byte(src))
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	a, b := p.Tasks[0], p.Tasks[1]
	if !a.Done || *a.Loop != (muster.LoopSpec{Check: "go test ./...", Max: 2}) || a.Prompt != "Line one.\nLine two." {
		t.Errorf("a: %+v", a)
	}
	if b.After != nil || b.KeyLines["after"] != 16 || !reflect.DeepEqual(b.Gates, []string{"make x, y", "make z"}) ||
		b.Budget.Tokens != 200000 || b.Timeout != time.Hour || !b.Delegates {
		t.Errorf("b: %+v", b)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.md")
	_, err := Load(missing)
	var me *muster.Error
	if !errors.As(err, &me) || me.Code != muster.CodeInvalid || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.md")
	if err := os.WriteFile(bad, []byte("## [ ] a: A\nOwms: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	var ps muster.Problems
	if !errors.As(err, &ps) || muster.ErrorCode(err) != muster.CodeInvalid || len(ps) != 1 {
		t.Fatalf("bad plan: %v", err)
	}
	if err.Error() != bad+`:2: unknown key "Owms"; did you mean "Owns"?` {
		t.Errorf("bad plan: %v", err)
	}
	p, err := Load("testdata/health.md")
	if err != nil || len(p.Tasks) != 4 || p.Source != "testdata/health.md" {
		t.Errorf("good plan: %v", err)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	p, probs, err := Check("testdata/bad.md", crew(), Options{})
	if err != nil || p == nil {
		t.Fatal(err)
	}
	want := []string{
		`testdata/bad.md:4: unknown key "Owms"; did you mean "Owns"?`,
		`testdata/bad.md:5: task api: Owns "../escape.go": path escapes the repository with ..`,
		`testdata/bad.md:7: duplicate task ID "api" (first on line 3)`,
		`testdata/bad.md:8: task api: unknown dependency "rout"`,
		`testdata/bad.md:10: bad task ID "bad id": use letters, digits, ".", "_" and "-", starting with a letter or digit`,
		`testdata/bad.md:11: task bad id: unknown dependency "c"`,
		`testdata/bad.md:14: dependency cycle: a -> b -> a`,
	}
	if got := problemStrings(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
	if _, _, err := Check("testdata/none.md", nil, Options{}); muster.ErrorCode(err) != muster.CodeInvalid {
		t.Errorf("missing: %v", err)
	}
}

// TestFieldsAfterABlankLineWarn: field lines must follow the heading
// directly; after a blank line they are prompt text, and the task would
// run with no Owns and no gate. Parse warns, naming the line; a prompt
// that merely mentions a key later on is left alone.
func TestFieldsAfterABlankLineWarn(t *testing.T) {
	t.Parallel()
	src := "## [ ] a: A\n\nOwns: d/**\nGate: true\n\nDo it.\n\n## [ ] b: B\nOwns: e/\n\nNotes follow.\nOwns: is a word here.\n\n## [ ] c: C\n\n```\nOwns: in a fence\n```\n"
	p, probs := Parse("p.md", []byte(src))
	want := []string{`p.md:3: warning: task a: "Owns:" after a blank line is prompt text, not a field (the task has no Owns): field lines follow the heading directly; remove the blank line above`}
	if got := problemStrings(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if len(p.Tasks) != 3 || len(p.Tasks[0].Owns) != 0 || len(p.Tasks[1].Owns) != 1 {
		t.Errorf("tasks %+v", p.Tasks)
	}
}

package planfile

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func crew() *muster.Config {
	return &muster.Config{Executors: []*muster.ExecutorSpec{
		{Name: "claude", Kind: muster.ExecClaudeCode, Clones: 2, Roles: []muster.Role{"coder", "reviewer"}, Models: []string{"sonnet", "opus"}},
		{Name: "codex", Kind: muster.ExecCodex, Clones: 1, Model: "gpt-5.5", Models: []string{"gpt-5.5-mini"}},
	}}
}

func mustParse(t *testing.T, name, src string) *muster.Plan {
	t.Helper()
	p, probs := Parse(name, []byte(src))
	if len(probs) != 0 {
		t.Fatalf("parse %s: %v", name, probs)
	}
	return p
}

func TestCapsOfTaskLimits(t *testing.T) {
	t.Parallel()
	_, probs := Parse("p.md", []byte("## [ ] a: A\nRetries: 1000000\nTimeout: 9999h\nBudget: $100000000\n\n## [ ] b: B\nRetries: 10\nTimeout: 48h\nBudget: $1000000\n"))
	want := []string{
		`p.md:2: Retries 1000000 is more than the cap of 10`,
		`p.md:3: Timeout 9999h0m0s is more than the cap of 48h0m0s: a task that runs longer should be split`,
		`p.md:4: bad Budget "$100000000": $1e+08 is more than the cap of $1000000`,
	}
	if got := problemStrings(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestValidateNoTasksYAML: a YAML plan without tasks is told where
// YAML tasks go, not about Markdown headings.
func TestValidateNoTasksYAML(t *testing.T) {
	t.Parallel()
	p := mustParse(t, "p.yaml", "title: empty\ntasks: []\n")
	want := []string{`p.yaml:1: plan has no tasks: a YAML plan lists them under "tasks:", each with an id and a title`}
	if got := problemStrings(Validate(p, nil, Options{})); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		src    string
		strict bool
		want   []string
	}{
		{"valid", "## [ ] a: A\nOwns: a/\n\n## [ ] b: B\nAfter: a\nOwns: a/x.go\nExecutor: codex\n", false, nil},
		{"no tasks", "# Plan: empty\n\nJust a brief.\n", false,
			[]string{`p.md:1: plan has no tasks: a task starts with a heading "## [ ] ID: Title"`}},
		{"bad id", "## [ ] my task: A\n", false,
			[]string{`p.md:1: bad task ID "my task": use letters, digits, ".", "_" and "-", starting with a letter or digit`}},
		{"bad id start", "## [ ] -a: A\n", false,
			[]string{`p.md:1: bad task ID "-a": use letters, digits, ".", "_" and "-", starting with a letter or digit`}},
		{"duplicate id", "## [ ] a: A\n\n## [ ] b: B\n\n## [ ] a: Again\n", false,
			[]string{`p.md:5: duplicate task ID "a" (first on line 1)`}},
		{"unknown dependency", "## [ ] route: R\n\n## [ ] docs: D\nOwns: d.md\nAfter: rout, zzz\n", false,
			[]string{`p.md:5: task docs: unknown dependency "rout"; did you mean "route"?`, `p.md:5: task docs: unknown dependency "zzz"`}},
		{"cycle", "## [ ] a: A\nAfter: c\n\n## [ ] b: B\nAfter: a\n\n## [ ] c: C\nAfter: b\n", false,
			[]string{`p.md:2: dependency cycle: a -> c -> b -> a`}},
		{"self cycle", "## [ ] a: A\nAfter: a\n", false,
			[]string{`p.md:2: dependency cycle: a -> a`}},
		{"two cycles once each", "## [ ] a: A\nAfter: b\n\n## [ ] b: B\nAfter: a\n\n## [ ] c: C\nAfter: d, a\n\n## [ ] d: D\nAfter: c\n", false,
			[]string{`p.md:2: dependency cycle: a -> b -> a`, `p.md:8: dependency cycle: c -> d -> c`}},
		{"done breaks cycle", "## [x] a: A\nAfter: b\n\n## [ ] b: B\nAfter: a\n", false, nil},
		{"owns escape", "## [ ] a: A\nOwns: ../x.go, /etc/passwd, ok.go\n", false,
			[]string{`p.md:2: task a: Owns "../x.go": path escapes the repository with ..`, `p.md:2: task a: Owns "/etc/passwd": absolute path escapes the repository`}},
		{"unknown executor", "## [ ] a: A\nExecutor: codx\n\n## [ ] b: B\nExecutor: gemini\n", false,
			[]string{`p.md:2: task a: unknown executor "codx"; did you mean "codex"?`, `p.md:5: task b: unknown executor "gemini" (the crew has: claude, codex)`}},
		{"role nobody has", "## [ ] a: A\nRole: tester\n", false,
			[]string{`p.md:2: task a: no executor in the crew has role "tester"`}},
		{"role executor lacks", "## [ ] a: A\nExecutor: codex\nRole: reviewer\n", false,
			[]string{`p.md:3: task a: executor "codex" has no role "reviewer"`}},
		{"model listed", "## [ ] a: A\nExecutor: codex\nModel: gpt-5.5-mini\n\n## [ ] b: B\nModel: gpt-5.5\n\n## [ ] c: C\nModel: opus\nExecutor: claude\n", false, nil},
		{"model not listed", "## [ ] a: A\nExecutor: codex\nModel: gpt-4\n", false,
			[]string{`p.md:3: task a: executor codex does not list model "gpt-4" (its models: gpt-5.5, gpt-5.5-mini)`}},
		{"model no reviewer lists", "## [ ] a: A\nRole: reviewer\nModel: gpt-5.5\n", false,
			[]string{`p.md:3: task a: no executor with role reviewer lists model "gpt-5.5" (claude: sonnet, opus)`}},
		{"code without run", "## [ ] a: A\nKind: code\n", false,
			[]string{`p.md:2: task a: Kind code needs a Run command`}},
		{"overlap warning", "## [ ] a: A\nOwns: internal/http/\n\n## [ ] b: B\nOwns: x.go, internal/http/router.go\n", false,
			[]string{`p.md:5: warning: tasks a (line 1) and b may run at the same time and their Owns overlap: "internal/http/" and "internal/http/router.go"`}},
		{"overlap strict", "## [ ] a: A\nOwns: **/*.go\n\n## [ ] b: B\nOwns: x.go\n", true,
			[]string{`p.md:5: tasks a (line 1) and b may run at the same time and their Owns overlap: "**/*.go" and "x.go"`}},
		{"overlap glob later", "## [ ] a: A\nOwns: pkg/x.go\n\n## [ ] b: B\nOwns: other.go\n\n## [ ] c: C\nOwns: **/x.go\n", false,
			[]string{`p.md:8: warning: tasks a (line 1) and c may run at the same time and their Owns overlap: "pkg/x.go" and "**/x.go"`}},
		{"ordered transitively", "## [ ] a: A\nOwns: x.go\n\n## [ ] b: B\nAfter: a\n\n## [ ] c: C\nAfter: b\nOwns: x.go\n", true, nil},
		{"done tasks do not overlap", "## [x] a: A\nOwns: x.go\n\n## [ ] c: C\nOwns: x.go\n", true, nil},
		{"long id", "## [ ] " + strings.Repeat("a", 5000) + ": A\n", false,
			[]string{`p.md:1: task ID of 5000 characters: the cap is 100`}},
		{"long title", "## [ ] a: " + strings.Repeat("t", 1<<20) + "\n", false,
			[]string{`p.md:1: task a: title of 1048576 bytes: the cap is 300; put the detail in the task's text`}},
		{"nul in title", "## [ ] a: bad\x00title\n", false,
			[]string{`p.md:1: task a: the title holds a control character (such as NUL, an escape or a bidirectional override); write it as plain text`}},
		{"bidi override in title", "## [ ] a: txt.exe\u202egpj\n", false,
			[]string{`p.md:1: task a: the title holds a control character (such as NUL, an escape or a bidirectional override); write it as plain text`}},
		{"bidi isolate in title", "## [ ] a: a\u2066b\n", false,
			[]string{`p.md:1: task a: the title holds a control character (such as NUL, an escape or a bidirectional override); write it as plain text`}},
		{"line separator in title", "## [ ] a: a\u2028b\n", false,
			[]string{`p.md:1: task a: the title holds a control character (such as NUL, an escape or a bidirectional override); write it as plain text`}},
		{"reserved owns", "## [ ] a: A\nOwns: muster.toml, .git/hooks/, .muster/x, ci/muster.ci.toml, ok.go, sub/.GIT/config\n", false,
			[]string{
				`p.md:2: task a: Owns "muster.toml": muster.toml is muster's or git's, which no task may change; own the files the task works on`,
				`p.md:2: task a: Owns ".git/hooks/": .git/ is muster's or git's, which no task may change; own the files the task works on`,
				`p.md:2: task a: Owns ".muster/x": .muster/ is muster's or git's, which no task may change; own the files the task works on`,
				`p.md:2: task a: Owns "ci/muster.ci.toml": ci/muster.ci.toml is muster's or git's, which no task may change; own the files the task works on`,
				`p.md:2: task a: Owns "sub/.GIT/config": .git is muster's or git's, which no task may change; own the files the task works on`,
			}},
	} {
		p := mustParse(t, "p.md", tc.src)
		got := problemStrings(Validate(p, crew(), Options{Strict: tc.strict, Reserved: []string{"ci/muster.ci.toml"}}))
		if tc.want == nil {
			tc.want = []string{}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestValidateSortsAndWarnings(t *testing.T) {
	t.Parallel()
	// bad.md also has an unknown key, which Parse reports; drop it here.
	p, _ := Parse("bad.md", mustRead(t, "testdata/bad.md"))
	probs := Validate(p, nil, Options{})
	want := []string{
		`bad.md:5: task api: Owns "../escape.go": path escapes the repository with ..`,
		`bad.md:7: duplicate task ID "api" (first on line 3)`,
		`bad.md:8: task api: unknown dependency "rout"`,
		`bad.md:10: bad task ID "bad id": use letters, digits, ".", "_" and "-", starting with a letter or digit`,
		`bad.md:11: task bad id: unknown dependency "c"`,
		`bad.md:14: dependency cycle: a -> b -> a`,
	}
	if got := problemStrings(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Warnings are not errors.
	p = mustParse(t, "w.md", "## [ ] a: A\nOwns: x\n\n## [ ] b: B\nOwns: x\n")
	probs = Validate(p, nil, Options{})
	if len(probs) != 1 || !probs[0].Warning || len(probs.Errors()) != 0 {
		t.Errorf("warning: %v", probs)
	}
}

func TestValidateLargeChain(t *testing.T) {
	t.Parallel()
	// A long chain is deep: the checks must not recurse per task.
	var b strings.Builder
	const n = 3000
	for i := 0; i < n; i++ {
		b.WriteString("## [ ] t" + strconv.Itoa(i) + ": T\nOwns: same.go\n")
		if i > 0 {
			b.WriteString("After: t" + strconv.Itoa(i-1) + "\n")
		}
		b.WriteString("\n")
	}
	p := mustParse(t, "chain.md", b.String())
	if probs := Validate(p, nil, Options{Strict: true}); len(probs) != 0 {
		t.Fatalf("chain: %v", probs[:1])
	}
}

func TestValidateFragment(t *testing.T) {
	t.Parallel()
	existing := mustParse(t, "plan.md", "## [ ] plan: P\nOwns: parser/, docs/parser.md\nDelegates: yes\nRetries: 1\nTimeout: 1h\nBudget: $2, 200k tokens\n\n## [ ] other: O\nOwns: x.go\n")
	parent := existing.Tasks[0]
	for _, tc := range []struct {
		name string
		src  string
		max  int
		want []string
	}{
		{"valid", "## [ ] p1: One\nOwns: parser/lex.go\nAfter: plan\n\n## [ ] p2: Two\nOwns: parser/ast/, docs/parser.md\nAfter: p1, other\n", 5, nil},
		{"empty", "nothing to add\n", 5, nil},
		{"too many", "## [ ] p1: One\nOwns: parser/a\n\n## [ ] p2: Two\nOwns: parser/b\n", 1,
			[]string{`out.md: 2 new tasks; task plan may add at most 1`}},
		{"id clash", "## [ ] other: Again\nOwns: parser/a\n", 5,
			[]string{`out.md:1: task ID "other" is already in the plan`}},
		{"duplicate", "## [ ] p1: One\nOwns: parser/a\n\n## [ ] p1: One\nOwns: parser/b\n", 5,
			[]string{`out.md:4: duplicate task ID "p1" (first on line 1)`}},
		{"unknown dep", "## [ ] p1: One\nOwns: parser/a\nAfter: othr\n", 5,
			[]string{`out.md:3: task p1: unknown dependency "othr"; did you mean "other"?`}},
		{"cycle", "## [ ] p1: One\nOwns: parser/a\nAfter: p2\n\n## [ ] p2: Two\nOwns: parser/b\nAfter: p1\n", 5,
			[]string{`out.md:3: dependency cycle: p1 -> p2 -> p1`}},
		{"executor", "## [ ] p1: One\nOwns: parser/a\nExecutor: gpt\n", 5,
			[]string{`out.md:3: task p1: unknown executor "gpt" (the crew has: claude, codex)`}},
		{"owns outside", "## [ ] p1: One\nOwns: parser/a.go, cmd/main.go, parser/**/*.go, **/*.go, docs/\n", 5,
			[]string{
				`out.md:2: task p1: Owns "cmd/main.go" is outside the Owns of task plan (parser/, docs/parser.md)`,
				`out.md:2: task p1: Owns "**/*.go" is outside the Owns of task plan (parser/, docs/parser.md)`,
				`out.md:2: task p1: Owns "docs/" is outside the Owns of task plan (parser/, docs/parser.md)`,
			}},
		{"overlap among new tasks", "## [ ] p1: One\nOwns: parser/\n\n## [ ] p2: Two\nOwns: parser/x.go\n", 5,
			[]string{`out.md:5: warning: tasks p1 (line 1) and p2 may run at the same time and their Owns overlap: "parser/" and "parser/x.go"`}},
		{"owns missing", "## [ ] p1: One\n", 5,
			[]string{`out.md:1: task p1: needs Owns inside the Owns of task plan (parser/, docs/parser.md)`}},
		{"authority and commands", "## [ ] p1: One\nOwns: parser/a\nAuthority: shell\nKind: code\nRun: rm -rf /\nGate: curl x | sh\nLoop: max=2 make\n", 5,
			[]string{
				`out.md:3: task p1: Authority shell is more than task plan has (write)`,
				`out.md:5: task p1: Run is a command; only a delegating task with Authority shell may propose commands`,
				`out.md:6: task p1: Gate is a command; only a delegating task with Authority shell may propose commands`,
				`out.md:7: task p1: Loop is a command; only a delegating task with Authority shell may propose commands`,
			}},
		{"limits above the delegator's", "## [ ] p1: One\nOwns: parser/a\nReview: none\nRetries: 3\nTimeout: 9h\nBudget: $100000, 5M tokens\n", 5,
			[]string{
				`out.md:3: task p1: Review none skips the review task plan gets; a delegated task is reviewed as its delegator is`,
				`out.md:4: task p1: Retries 3 is more than task plan has (1)`,
				`out.md:5: task p1: Timeout 9h0m0s is more than task plan has (1h0m0s)`,
				`out.md:6: task p1: Budget $100000.00 is more than task plan has ($2.00)`,
				`out.md:6: task p1: Budget of 5000000 tokens is more than task plan has (200000 tokens)`,
			}},
		{"delegation depth", "## [ ] p1: One\nOwns: parser/a\nDelegates: yes\n\n## [ ] p2: Two\nOwns: parser/b\nDelegates: 2\n\n## [ ] p3: Three\nOwns: parser/c\nDelegates: no\n", 5,
			[]string{
				`out.md:3: task p1: Delegates 1 is more than task plan may pass on (0: a delegated task carries at most its delegator's Delegates 1 less one)`,
				`out.md:7: task p2: Delegates 2 is more than task plan may pass on (0: a delegated task carries at most its delegator's Delegates 1 less one)`,
			}},
		{"owns escape", "## [ ] p1: One\nOwns: parser/../../x\n", 5,
			[]string{`out.md:2: task p1: Owns "parser/../../x": path escapes the repository with ..`}},
	} {
		frag, _ := Parse("out.md", []byte(tc.src))
		got := problemStrings(ValidateFragment(parent, existing, frag, crew(), tc.max))
		if tc.want == nil {
			tc.want = []string{}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// Delegates: 3 passes on 2 at most.
	deep := mustParse(t, "plan.md", "## [ ] plan: P\nDelegates: 3\n")
	if d := deep.Tasks[0].DelegationDepth(); d != 3 {
		t.Fatalf("Delegates: 3 parsed as depth %d", d)
	}
	frag := mustParse(t, "out.md", "## [ ] p1: One\nDelegates: 2\n\n## [ ] p2: Two\nDelegates: 3\n")
	if got := problemStrings(ValidateFragment(deep.Tasks[0], deep, frag, crew(), 0)); !reflect.DeepEqual(got, []string{
		`out.md:5: task p2: Delegates 3 is more than task plan may pass on (2: a delegated task carries at most its delegator's Delegates 3 less one)`}) {
		t.Errorf("depth 3: %q", got)
	}
	// A parent without Timeout or Budget is bounded by the run's
	// defaults: its executor's timeout, the run's budget.
	cfg := crew()
	cfg.Executors[0].Timeout, cfg.Executors[1].Timeout = 30*time.Minute, 20*time.Minute
	cfg.Run.BudgetUSDMicros, cfg.Run.BudgetTokens = 5_000_000, 1000
	bare := mustParse(t, "plan.md", "## [ ] plan: P\nDelegates: yes\n")
	frag = mustParse(t, "out.md", "## [ ] p1: One\nTimeout: 2h\nBudget: $9, 2k tokens\n\n## [ ] p2: Two\nTimeout: 30m\nBudget: $5\n")
	if got := problemStrings(ValidateFragment(bare.Tasks[0], bare, frag, cfg, 0)); !reflect.DeepEqual(got, []string{
		`out.md:2: task p1: Timeout 2h0m0s is more than task plan has (30m0s)`,
		`out.md:3: task p1: Budget $9.00 is more than task plan has ($5.00)`,
		`out.md:3: task p1: Budget of 2000 tokens is more than task plan has (1000 tokens)`}) {
		t.Errorf("run defaults: %q", got)
	}
	// A parent with shell authority may propose commands.
	shell := mustParse(t, "plan.md", "## [ ] plan: P\nAuthority: shell\nDelegates: yes\n")
	frag = mustParse(t, "out.md", "## [ ] p1: One\nKind: code\nRun: make gen\nGate: make test\nAuthority: shell\n")
	if probs := ValidateFragment(shell.Tasks[0], shell, frag, crew(), 0); len(probs) != 0 {
		t.Errorf("shell parent: %v", probs)
	}
	// A parent without Owns lets new tasks own anything.
	free := mustParse(t, "plan.md", "## [ ] plan: P\nDelegates: yes\n")
	frag = mustParse(t, "out.md", "## [ ] p1: One\nOwns: anything/\n\n## [ ] p2: Two\n")
	if probs := ValidateFragment(free.Tasks[0], free, frag, crew(), 0); len(probs) != 0 {
		t.Errorf("free parent: %v", probs)
	}
}

func TestCovered(t *testing.T) {
	t.Parallel()
	parent := []string{"parser/", "docs/*.md", "gen/**", "one.go"}
	for _, tc := range []struct {
		e    string
		want bool
	}{
		{"parser/x.go", true},
		{"parser/sub/", true},
		{"parser/", true},
		{"parser/**/*.go", true},
		{"docs/a.md", true},
		{"docs/*.md", true},
		{"docs/sub/a.md", false},
		{"gen/x/y.go", true},
		{"gen/x/", true},
		{"one.go", true},
		{"two.go", false},
		{"*.go", false},
		{"parserx/", false},
	} {
		if got := covered(parent, tc.e); got != tc.want {
			t.Errorf("covered(%q) = %v, want %v", tc.e, got, tc.want)
		}
	}
}

// In a run on a fleet, a task that names an executor nobody serves yet
// is a warning (the run waits for a worker serving it to join), with the
// nearest name as a hint; without a fleet it stays an error.
func TestUnknownExecutorOnAFleetWarns(t *testing.T) {
	t.Parallel()
	cfg := crew()
	cfg.Fleet.NATS = "nats://127.0.0.1:4222"
	p := mustParse(t, "p.md", "## [ ] a: A\nExecutor: codx\n\n## [ ] b: B\nExecutor: gpu\n")
	probs := Validate(p, cfg, Options{})
	if len(probs) != 2 || len(probs.Errors()) != 0 {
		t.Fatalf("problems %v", probs)
	}
	if got := probs[0].String(); !strings.Contains(got, `p.md:2: warning: task a: executor "codx" is not in the crew (did you mean "codex"?)`) || !strings.Contains(got, "join_wait (5m0s)") {
		t.Errorf("warning %q", got)
	}
	if len(Validate(p, crew(), Options{}).Errors()) != 2 {
		t.Error("without a fleet an unknown executor is not an error")
	}
}

// TestCheckBrokenPlanIsNotAlsoEmpty: a plan whose syntax is broken
// before its first task is told of the syntax, not also that it has no
// tasks (the second message sent users looking in the wrong place).
func TestCheckBrokenPlanIsNotAlsoEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, src := range map[string]string{
		"p.yaml": "tasks:\n  - id: a\n   title: x\n",
		"p.md":   "## [?] a: A\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, probs, err := Check(path, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range problemStrings(probs) {
			if strings.Contains(s, "no tasks") {
				t.Errorf("%s: %q among %q", name, s, problemStrings(probs))
			}
		}
		if len(probs) == 0 {
			t.Errorf("%s: no problem", name)
		}
	}
}

// TestProblemsNameTheLineOfARepeatedKey: a list key may repeat (Owns:
// on two lines); a problem with an item names the line the item is on,
// not the key's first line.
func TestProblemsNameTheLineOfARepeatedKey(t *testing.T) {
	t.Parallel()
	src := "## [ ] a: A\nOwns: ok.go\nAfter: -\nOwns: /abs\nAfter: nope\nOwns: dir/\n\n## [ ] b: B\nOwns: x.go\nOwns: dir/y.go\n"
	p := mustParse(t, "p.md", src)
	want := []string{
		`p.md:4: task a: Owns "/abs": absolute path escapes the repository`,
		`p.md:5: task a: unknown dependency "nope"`,
		`p.md:10: warning: tasks a (line 1) and b may run at the same time and their Owns overlap: "dir/" and "dir/y.go"`,
	}
	if got := problemStrings(Validate(p, nil, Options{})); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestYAMLProblemsNameTheLineOfAnItem: in a YAML list written one item a
// line, a problem with an item names the item's line.
func TestYAMLProblemsNameTheLineOfAnItem(t *testing.T) {
	t.Parallel()
	src := "tasks:\n  - id: a\n    title: A\n    owns:\n      - ok.go\n      - /abs\n    after:\n      - nope\n"
	p := mustParse(t, "p.yaml", src)
	want := []string{
		`p.yaml:6: task a: Owns "/abs": absolute path escapes the repository`,
		`p.yaml:8: task a: unknown dependency "nope"`,
	}
	if got := problemStrings(Validate(p, nil, Options{})); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

package planfile

import (
	"reflect"
	"slices"
	"testing"
)

// TestRaceParses: Race: N, Race: first and a list of candidates in
// Executor:, in Markdown and YAML, land in the same task fields.
func TestRaceParses(t *testing.T) {
	t.Parallel()
	md := mustParse(t, "p.md", "## [ ] a: A\nRace: 3\nExecutor: claude, codex\n\n## [ ] b: B\nRace: FIRST\n")
	y := mustParse(t, "p.yaml", "tasks:\n  - id: a\n    title: A\n    race: 3\n    executor: [claude, codex]\n  - id: b\n    title: B\n    race: first\n")
	for _, p := range []struct {
		name string
		a, b int
	}{{"md", 0, 1}, {"yaml", 0, 1}} {
		plan := md
		if p.name == "yaml" {
			plan = y
		}
		a, b := plan.Tasks[p.a], plan.Tasks[p.b]
		if a.Race != 3 || a.RaceFirst || a.Executor != "" || !slices.Equal(a.Candidates, []string{"claude", "codex"}) {
			t.Errorf("%s: task a = race %d first %v executor %q candidates %q", p.name, a.Race, a.RaceFirst, a.Executor, a.Candidates)
		}
		if b.Race != 0 || !b.RaceFirst || !b.Racing() {
			t.Errorf("%s: task b = race %d first %v", p.name, b.Race, b.RaceFirst)
		}
	}
	if Hash(md) != Hash(y) {
		t.Error("the Markdown and YAML forms of one race hash differently")
	}
}

// TestRaceHash: a plan without Race: keeps its hash (the keys are left
// out at their zero value), and each race key changes it.
func TestRaceHash(t *testing.T) {
	t.Parallel()
	plain := mustParse(t, "p.md", "## [ ] a: A\nOwns: x.go\n")
	if got := string(Canonical(plain)); got != `{"v":2,"title":"","brief":"","tasks":[{"id":"a","title":"A","owns":["x.go"],"role":"coder","kind":"agent","authority":"write"}]}` {
		t.Errorf("canonical form of a plan without Race: changed: %s", got)
	}
	seen := map[string]string{Hash(plain): "plain"}
	for _, src := range []string{
		"## [ ] a: A\nOwns: x.go\nRace: 2\n",
		"## [ ] a: A\nOwns: x.go\nRace: 3\n",
		"## [ ] a: A\nOwns: x.go\nRace: first\n",
		"## [ ] a: A\nOwns: x.go\nRace: 2\nExecutor: claude, codex\n",
		"## [ ] a: A\nOwns: x.go\nRace: 2\nExecutor: codex, claude\n",
	} {
		h := Hash(mustParse(t, "p.md", src))
		if prev, dup := seen[h]; dup {
			t.Errorf("%q hashes as %q", src, prev)
		}
		seen[h] = src
	}
}

// TestRaceProblems: every misuse of Race: and of a candidate list is
// reported at its line, with what to do.
func TestRaceProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"ok", "## [ ] a: A\nRace: 2\nExecutor: claude, codex\n\n## [ ] b: B\nRace: first\n\n## [ ] c: C\nRace: 2\nExecutor: claude\n", nil},
		{"list without race", "## [ ] a: A\nExecutor: claude, codex\n",
			[]string{`p.md:2: task a: Executor names one executor; a list of candidates (claude, codex) needs Race: N or Race: first`}},
		{"race on code", "## [ ] a: A\nKind: code\nRun: make\nRace: 2\n",
			[]string{`p.md:4: task a: Race: on a Kind: code task: a command runs the same every time; race an agent task`}},
		{"race on delegates", "## [ ] a: A\nDelegates: yes\nRace: 3\n",
			[]string{`p.md:3: task a: Race: on a Delegates: task: only one plan may be spliced in; race the tasks it delegates instead`}},
		{"unknown candidate", "## [ ] a: A\nRace: 3\nExecutor: claude, codx, gemini\n",
			[]string{`p.md:3: task a: unknown candidate executor "codx"; did you mean "codex"?`, `p.md:3: task a: unknown candidate executor "gemini" (the crew has: claude, codex)`}},
		{"candidate twice", "## [ ] a: A\nRace: 2\nExecutor: claude, claude\n",
			[]string{`p.md:3: task a: candidate "claude" named twice in Executor:`}},
		{"candidate lacks role", "## [ ] a: A\nRole: reviewer\nRace: 2\nExecutor: claude, codex\n",
			[]string{`p.md:4: task a: candidate executor "codex" has no role "reviewer"`}},
		{"more candidates than race", "## [ ] a: A\nRace: 2\nExecutor: claude, codex, claude2\n",
			[]string{`p.md:3: task a: unknown candidate executor "claude2"; did you mean "claude"?`, `p.md:2: task a: Race 2 names 3 candidates in Executor:; name at most 2, or raise Race`}},
	} {
		p := mustParse(t, "p.md", tc.src)
		got := problemStrings(Validate(p, crew(), Options{}))
		if tc.want == nil {
			tc.want = []string{}
		}
		slices.Sort(got)
		slices.Sort(tc.want)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	for _, bad := range []string{"1", "0", "9", "many", "-2"} {
		_, probs := Parse("p.md", []byte("## [ ] a: A\nRace: "+bad+"\n"))
		want := []string{`p.md:2: bad Race "` + bad + `": want the number of candidates, 2 to 8, or first`}
		if got := problemStrings(probs); !reflect.DeepEqual(got, want) {
			t.Errorf("Race: %s: got %q, want %q", bad, got, want)
		}
	}
}

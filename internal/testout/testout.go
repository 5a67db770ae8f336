// Package testout reads test runners' own output: which tests failed and
// the first line of each one's assertion, for go test, TAP (node --test,
// tap), node's spec reporter, Jest, Vitest, pytest, cargo test, mocha and
// JUnit XML. It is pure: text in, failures out.
package testout

import (
	"regexp"
	"strings"
	"sync"
)

// Failure is one failing test: its name as the runner prints it and the
// first line of its assertion or error ("" when the output has none).
type Failure struct {
	Name    string
	Message string
}

// Report is what one runner's output says. Runner is the parser that
// recognised the output ("go", "cargo", "pytest", "jest", "vitest",
// "mocha", "tap", "node", "junit"), "" when none did; Failures are in the
// order the runner printed them, each name once.
type Report struct {
	Runner   string
	Failures []Failure
}

// Names returns the failing tests' names.
func (r Report) Names() []string {
	out := make([]string, len(r.Failures))
	for i, f := range r.Failures {
		out[i] = f.Name
	}
	return out
}

type parser struct {
	name string
	// sign matches output of this runner, failing or not.
	sign  func() *regexp.Regexp
	parse func(lines []string) []Failure
}

var parsers = []parser{
	{"go", lazyRegexp(`(?m)^(\s*--- FAIL: |(ok|FAIL)\s+\S+\s+(\d+\.\d+s|\(cached\)|\[)|=== RUN\s)`), goParse},
	{"cargo", lazyRegexp(`(?m)^test result: (ok|FAILED)\.|^running \d+ tests?$`), cargoParse},
	{"pytest", lazyRegexp(`(?m)^=+ (short test summary info|.*\b(passed|failed|error|errors)\b.* in [\d.]+s.*) =+$|^(FAILED|ERROR) \S+::`), pytestParse},
	{"vitest", lazyRegexp(`(?m)^\s*Test Files\s+\d+`), vitestParse},
	{"jest", lazyRegexp(`(?m)^Tests:\s+.*\d+ total`), jestParse},
	{"mocha", lazyRegexp(`(?m)^\s+\d+ (passing|failing)( \(\d+m?s\))?$`), mochaParse},
	{"tap", lazyRegexp(`(?m)^TAP version \d+$|^\s*(not )?ok \d+ - `), tapParse},
	{"node", lazyRegexp(`(?m)^ℹ (tests|fail) \d+$`), nodeSpecParse},
}

// lazyRegexp compiles expr on first use, not when muster starts (every
// confined start of an agent or a gate runs this package's
// initialisation: see cmd/muster).
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Parse reads a gate's output.
func Parse(out string) Report {
	lines := strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n")
	for _, p := range parsers {
		if p.sign().MatchString(out) {
			return Report{Runner: p.name, Failures: dedupe(p.parse(lines))}
		}
	}
	return Report{}
}

func dedupe(fs []Failure) []Failure {
	seen := map[string]bool{}
	var out []Failure
	for _, f := range fs {
		if f.Name == "" || seen[f.Name] {
			continue
		}
		seen[f.Name] = true
		f.Message = clip(strings.TrimSpace(f.Message))
		out = append(out, f)
	}
	return out
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// next returns the first non-blank line after i whose indent is more
// than min (-1: any), trimmed, or "".
func next(lines []string, i, depth int) string {
	for _, l := range lines[i+1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if indent(l) <= depth {
			return ""
		}
		return strings.TrimSpace(l)
	}
	return ""
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }

var (
	goFail    = lazyRegexp(`^\s*--- FAIL: (\S+)`)
	goMessage = lazyRegexp(`^\s+(?:\S+\.go:\d+: )?(.*\S)`)
)

// goParse: `--- FAIL: TestX (0.00s)` and the message under it; subtests
// whose parent is named too are left out.
func goParse(lines []string) []Failure {
	var out []Failure
	named := map[string]bool{}
	for i, l := range lines {
		m := goFail().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		parent, _, sub := strings.Cut(m[1], "/")
		if sub && named[parent] {
			continue
		}
		named[m[1]] = true
		f := Failure{Name: m[1]}
		if i+1 < len(lines) && !goFail().MatchString(lines[i+1]) {
			if mm := goMessage().FindStringSubmatch(lines[i+1]); mm != nil {
				f.Message = mm[1]
			}
		}
		out = append(out, f)
	}
	return out
}

var (
	cargoFail  = lazyRegexp(`^test (\S+) \.\.\. FAILED$`)
	cargoBlock = lazyRegexp(`^---- (\S+) stdout ----$`)
	cargoPanic = lazyRegexp(`panicked at (?:'(.*)', \S+|\S+:)$`)
)

// cargoParse: `test x ... FAILED`, the message from its `---- x stdout
// ----` block (the line after "panicked at", or the old quoted form).
func cargoParse(lines []string) []Failure {
	msgs := map[string]string{}
	for i, l := range lines {
		m := cargoBlock().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		for j := i + 1; j < len(lines) && j < i+20 && !cargoBlock().MatchString(lines[j]); j++ {
			if p := cargoPanic().FindStringSubmatch(lines[j]); p != nil {
				msgs[m[1]] = p[1]
				if p[1] == "" {
					msgs[m[1]] = next(lines, j, -1)
				}
				break
			}
		}
	}
	var out []Failure
	for _, l := range lines {
		if m := cargoFail().FindStringSubmatch(l); m != nil {
			out = append(out, Failure{Name: m[1], Message: msgs[m[1]]})
		}
	}
	return out
}

var (
	pytestSummary = lazyRegexp(`^(?:FAILED|ERROR) (\S+?)(?: - (.*))?$`)
	pytestVerbose = lazyRegexp(`^(\S+::\S+) (?:FAILED|ERROR)`)
	pytestHeader  = lazyRegexp(`^_{3,} (.+?) _{3,}$`)
	pytestE       = lazyRegexp(`^E\s+(.*\S)`)
)

// pytestParse: the short test summary (`FAILED path::test - message`),
// else `-v` lines, with the first `E` line of each failure's section.
func pytestParse(lines []string) []Failure {
	var out []Failure
	eLine := map[string]string{}
	for i, l := range lines {
		if m := pytestHeader().FindStringSubmatch(l); m != nil {
			for _, ll := range lines[i+1:] {
				if pytestHeader().MatchString(ll) {
					break
				}
				if e := pytestE().FindStringSubmatch(ll); e != nil {
					eLine[m[1]] = e[1]
					break
				}
			}
		}
	}
	for _, l := range lines {
		if m := pytestSummary().FindStringSubmatch(l); m != nil {
			out = append(out, Failure{Name: m[1], Message: firstOf(m[2], eLine[shortPy(m[1])])})
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, l := range lines {
		if m := pytestVerbose().FindStringSubmatch(l); m != nil {
			out = append(out, Failure{Name: m[1], Message: eLine[shortPy(m[1])]})
		}
	}
	return out
}

// shortPy is the section header pytest prints for a test id:
// "tests/test_a.py::TestK::test_x" → "TestK.test_x".
func shortPy(id string) string {
	parts := strings.Split(id, "::")
	return strings.Join(parts[1:], ".")
}

func firstOf(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}

var jestBullet = lazyRegexp(`^\s*● (.+\S)\s*$`)

// jestParse: `● suite › test` and the first line of its message.
func jestParse(lines []string) []Failure {
	var out []Failure
	for i, l := range lines {
		m := jestBullet().FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(m[1], "Console") {
			continue
		}
		out = append(out, Failure{Name: m[1], Message: next(lines, i, -1)})
	}
	return out
}

var vitestFail = lazyRegexp(`^\s*FAIL\s+(\S.* > .+?)\s*$`)

// vitestParse: ` FAIL  file > suite > test` and the error line under it.
func vitestParse(lines []string) []Failure {
	var out []Failure
	for i, l := range lines {
		if m := vitestFail().FindStringSubmatch(l); m != nil {
			out = append(out, Failure{Name: m[1], Message: next(lines, i, -1)})
		}
	}
	return out
}

var (
	mochaFailing = lazyRegexp(`^\s+\d+ failing$`)
	mochaItem    = lazyRegexp(`^\s+\d+\) (.*\S)$`)
)

// mochaParse: after "N failing", each `N) suite` / `   test:` title and
// the first line under it.
func mochaParse(lines []string) []Failure {
	var out []Failure
	start := -1
	for i, l := range lines {
		if mochaFailing().MatchString(l) {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	for i := start + 1; i < len(lines); i++ {
		m := mochaItem().FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		title := []string{m[1]}
		j := i
		for !strings.HasSuffix(title[len(title)-1], ":") && j+1 < len(lines) && strings.TrimSpace(lines[j+1]) != "" {
			j++
			title = append(title, strings.TrimSpace(lines[j]))
		}
		name := strings.TrimSuffix(strings.Join(title, " "), ":")
		out = append(out, Failure{Name: name, Message: next(lines, j, -1)})
		i = j
	}
	return out
}

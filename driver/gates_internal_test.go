package driver

import (
	"fmt"
	"testing"

	"github.com/muster-run/muster"
)

func TestGateSummaryNamesFailingTests(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"--- FAIL: TestA (0.00s)\n    a_test.go:3: got 1, want 2\n--- FAIL: TestB (0.00s)\n    --- FAIL: TestB/sub (0.00s)\nFAIL\n", "TestA: got 1, want 2; also TestB"},
		{"--- FAIL: TestOnly (0.01s)\n--- FAIL: TestNext (0.00s)\nFAIL\n", "TestOnly; also TestNext"},
		{"build failed: undefined: x\n", "build failed: undefined: x"},
		{"", "exit 2, no output"},
	} {
		if got := gateSummary(muster.GateResult{Output: c.out, ExitCode: 2}); got != c.want {
			t.Errorf("gateSummary(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

// A gate failing on the base and on the task is pre-existing only when it
// fails the same way: no newly failing test in the runner's own output
// (pytest, TAP, ...), else the same exit status and no new failure line.
func TestTriageSameWayOnly(t *testing.T) {
	py := func(tests ...string) string {
		s := "============ short test summary info ============\n"
		for _, n := range tests {
			s += "FAILED tests/test_a.py::" + n + " - assert 1 == 2\n"
		}
		return s + "======= 1 failed, 3 passed in 0.12s =======\n"
	}
	tap := func(dir string, tests ...string) string {
		s := "TAP version 13\n"
		for i, n := range tests {
			s += fmt.Sprintf("# Subtest: %s\nnot ok %d - %s\n  ---\n  location: '%s/test/a.test.js:3:1'\n  error: 'no'\n  ...\n", n, i+1, n, dir)
		}
		return s
	}
	for name, c := range map[string]struct {
		after, before string
		exitA, exitB  int
		charged       bool
		newly         []string
	}{
		"pytest same failure":     {py("test_old"), py("test_old"), 1, 1, false, nil},
		"pytest another broke":    {py("test_old", "test_new"), py("test_old"), 1, 1, true, []string{"tests/test_a.py::test_new"}},
		"pytest one fixed":        {py("test_b"), py("test_old", "test_b"), 1, 1, false, nil},
		"tap another broke":       {tap("/clones/x", "adds", "subs"), tap("/clones/muster-baseline", "adds"), 1, 1, true, []string{"subs"}},
		"tap same in other clone": {tap("/clones/x", "adds"), tap("/clones/muster-baseline", "adds"), 1, 1, false, nil},
		"build broke":             {"pytest: error: unrecognized arguments\n", py("test_old"), 4, 1, true, nil},
		"no parser, same":         {"/a/x/lint.go:12: error: unused x (0.2s)\n", "/b/y/lint.go:11: error: unused x (0.3s)\n", 1, 1, false, nil},
		"no parser, new line":     {"lint.go:12: error: unused x\nnew.go:3: error: unused y\n", "lint.go:12: error: unused x\n", 1, 1, true, nil},
		"no parser, other exit":   {"make: *** [all] Error 2\n", "make: *** [all] Error 2\n", 2, 1, true, nil},
	} {
		charged, newly := triage(muster.GateResult{Output: c.after, ExitCode: c.exitA}, muster.GateResult{Output: c.before, ExitCode: c.exitB})
		if charged != c.charged || fmt.Sprint(newly) != fmt.Sprint(c.newly) {
			t.Errorf("%s: charged %v newly %v, want %v %v", name, charged, newly, c.charged, c.newly)
		}
	}
}

// The reason names the first failing test and its assertion, for every
// runner testout reads, and for JUnit XML the gate wrote.
func TestGateSummaryFromEachRunner(t *testing.T) {
	for _, c := range []struct{ out, junit, want string }{
		{"TAP version 13\n# Subtest: adds\nnot ok 1 - adds\n  ---\n  error: |-\n    Expected values to be strictly equal:\n\n    3 !== 4\n  ...\n1..1\n# duration_ms 518.37\n", "", "adds: Expected values to be strictly equal: 3 !== 4"},
		{"FAILED tests/test_a.py::test_add - assert 3 == 4\n=== 1 failed in 0.1s ===\n", "", "tests/test_a.py::test_add: assert 3 == 4"},
		{"all broke\n", `<testsuite><testcase classname="k" name="t1"><failure message="boom">x</failure></testcase></testsuite>`, "k.t1: boom"},
	} {
		if got := gateSummary(muster.GateResult{Output: c.out, JUnit: c.junit, ExitCode: 1}); got != c.want {
			t.Errorf("gateSummary(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}

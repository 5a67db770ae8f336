package testout

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Each runner's real output (captured from node 20, pytest 7, cargo 1.x,
// go test; Jest, Vitest and mocha in their documented default format)
// gives its failing tests, in order, with the assertion's first line.
func TestParseEachRunner(t *testing.T) {
	for _, c := range []struct {
		file, runner string
		want         []Failure
	}{
		{"go.txt", "go", []Failure{{"TestCount", "count = 3, want 2"}, {"TestSub", ""}}},
		{"node-tap.txt", "tap", []Failure{{"math > adds", "Expected values to be strictly equal: 3 !== 4"}, {"top", "top broke"}}},
		{"node-spec.txt", "node", []Failure{{"adds", "Expected values to be strictly equal: 3 !== 4"}, {"top", "top broke"}}},
		{"pytest.txt", "pytest", []Failure{{"tests/test_a.py::test_add", "assert (1 + 2) == 4"}, {"tests/test_a.py::TestK::test_x", "AssertionError: letters differ"}}},
		{"pytest-verbose.txt", "pytest", []Failure{{"tests/test_a.py::test_add", "assert (1 + 2) == 4"}, {"tests/test_a.py::TestK::test_x", "AssertionError: letters differ"}}},
		{"cargo.txt", "cargo", []Failure{{"tests::adds", "assertion `left == right` failed"}, {"tests::boom", "boom went the test"}}},
		{"jest.txt", "jest", []Failure{{"sum › adds 1 + 2", "expect(received).toBe(expected) // Object.is equality"}}},
		{"vitest.txt", "vitest", []Failure{{"test/sum.test.ts > sum > adds", "AssertionError: expected 3 to be 4 // Object.is equality"}}},
		{"mocha.txt", "mocha", []Failure{{"sum adds", "AssertionError [ERR_ASSERTION]: 3 == 4"}, {"parse rejects junk", "Error: expected an error"}}},
	} {
		out, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		r := Parse(string(out))
		if r.Runner != c.runner || !reflect.DeepEqual(r.Failures, c.want) {
			t.Errorf("%s: %s %q, want %s %q", c.file, r.Runner, r.Failures, c.runner, c.want)
		}
	}
}

func TestJUnit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "pytest-junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := JUnit(data)
	want := []Failure{{"tests.test_a.test_add", "assert (1 + 2) == 4"}, {"tests.test_a.TestK.test_x", "AssertionError: letters differ"}}
	if err != nil || r.Runner != "junit" || !reflect.DeepEqual(r.Failures, want) {
		t.Fatalf("%v %q", err, r.Failures)
	}
	if _, err := JUnit([]byte("<testsuite><testcase")); err == nil {
		t.Fatal("truncated XML read without error")
	}
}

// Output no parser knows, and passing output, name nothing.
func TestParseUnknownAndPassing(t *testing.T) {
	for _, out := range []string{"lint: 3 problems\n", "", "ok  \tgt\t0.01s\n", "test result: ok. 3 passed; 0 failed\n"} {
		if r := Parse(out); len(r.Failures) != 0 {
			t.Errorf("%q: %q", out, r.Failures)
		}
	}
	if r := Parse("lint: 3 problems\n"); r.Runner != "" {
		t.Errorf("runner %q", r.Runner)
	}
}

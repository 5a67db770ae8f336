package driver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// Every entry of the environment-failure table, with output its
// toolchain really prints, is an environment failure naming the missing
// piece; output that looks alike but names the project's own file is not.
func TestGateEnvTableEveryEntry(t *testing.T) {
	g := muster.GateSpec{Name: "test", Command: "npm test"}
	cases := map[string]struct {
		out, want string
		exit      int
	}{
		"command not found":                   {"> x@1.0.0 test\n> tsd && node --test\n\nsh: line 1: tsd: command not found\n", "a program is missing: tsd", 1},
		"Cannot find module":                  {"node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module 'left-pad'\nRequire stack:\n- /w/index.js\n", "a Node module is missing: left-pad", 1},
		"MODULE_NOT_FOUND":                    {"Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'left-pad' imported from /w/index.mjs\n  code: 'ERR_MODULE_NOT_FOUND'\n", "a Node module is missing: left-pad", 1},
		"ModuleNotFoundError":                 {"Traceback (most recent call last):\n  File \"/w/t.py\", line 1, in <module>\n    import requests\nModuleNotFoundError: No module named 'requests'\n", "a Python module is missing: requests", 1},
		"No module named":                     {"/usr/bin/python3: No module named pytest\n", "a Python module is missing: pytest", 1},
		"no required module provides package": {"main.go:3:8: no required module provides package github.com/x/y; to add it:\n\tgo get github.com/x/y\n", "a Go module is missing: github.com/x/y", 1},
		"failed to initialize build cache":    {"failed to initialize build cache at /root/.cache/go-build: mkdir /root/.cache: read-only file system\n", "a writable Go build cache is missing: /root/.cache/go-build", 1},
		"exit 127":                            {"sh: 1: gotestsum: not found\n", "command not found (exit 127): sh: 1: gotestsum: not found", 127},
		"exit 126":                            {"sh: 1: ./check.sh: Permission denied\n", "a program is not executable (exit 126)", 126},
	}
	signs := map[string]bool{}
	for _, s := range gateEnvSigns {
		signs[s.sign] = true
	}
	for name, c := range cases {
		delete(signs, name)
		why, hard := gateEnv(g, muster.GateResult{ExitCode: c.exit, Output: c.out}, "")
		if !strings.Contains(why, c.want) || !strings.HasPrefix(why, "environment error: gate test (npm test) could not run") || !strings.HasSuffix(why, "then run muster resume") {
			t.Errorf("%s: %q, want it to name %q", name, why, c.want)
		}
		if hard != (c.exit >= 126) {
			t.Errorf("%s: hard %v", name, hard)
		}
	}
	for s := range signs {
		t.Errorf("table entry %q has no case", s)
	}
}

func TestGateEnvLeavesTheProjectsOwnModulesToTheTask(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "mypkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	g := muster.GateSpec{Name: "test", Command: "t"}
	for _, out := range []string{
		"Error: Cannot find module './util'\n",
		"Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/w/src/x.js' imported from /w/t.mjs\n",
		"ModuleNotFoundError: No module named 'mypkg.newmod'\n",
		"--- FAIL: TestX (0.00s)\n    x_test.go:3: got 1, want 2\n",
		"not ok 1 - adds\n",
	} {
		if why, _ := gateEnv(g, muster.GateResult{ExitCode: 1, Output: out}, dir); why != "" {
			t.Errorf("%q: %q, want the task's failure", out, why)
		}
	}
	if why, _ := gateEnv(g, muster.GateResult{Passed: true, Output: "Cannot find module 'x'"}, dir); why != "" {
		t.Errorf("a passing gate: %q", why)
	}
}

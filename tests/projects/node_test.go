package projects_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A Node project with an npm dependency and a node --test suite runs
// green in muster's clones with the muster.toml muster init wrote
// ([setup] npm ci, gate npm test), and its second run installs nothing.
func TestNodeProjectWithAnNpmDependency(t *testing.T) {
	if testing.Short() {
		t.Skip("installs from the npm registry; skipped with -short")
	}
	need(t, "node", "install Node.js")
	npm := need(t, "npm", "install Node.js")
	repo := project(t, map[string]string{
		"package.json":     `{"name": "padder", "version": "1.0.0", "private": true, "scripts": {"test": "node --test"}, "dependencies": {"left-pad": "1.3.0"}}` + "\n",
		"index.js":         "const leftPad = require('left-pad');\nmodule.exports = (s) => leftPad(s, 5, '0');\n",
		"test/pad.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\nconst pad = require('..');\ntest('pads', () => { assert.strictEqual(pad('7'), '00007'); });\n",
		".gitignore":       "node_modules/\n",
	})
	// The lockfile, from the registry, into a scratch npm cache (HOME).
	lock := exec.Command(npm, "install", "--package-lock-only", "--no-audit", "--no-fund")
	lock.Dir = repo
	if out, err := lock.CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("npm install --package-lock-only: %v\n%s", err, out)
		}
		t.Skipf("the npm registry is not reachable: %v\n%s", err, out)
	}
	commit(t, repo, "padder")
	toml := muInit(t, repo)
	if !strings.Contains(toml, `commands = ["npm ci --no-audit --no-fund"]`) || !strings.Contains(toml, `npm = "npm test"`) {
		t.Fatalf("muster init wrote:\n%s", toml)
	}
	commit(t, repo, "muster init")

	code, evs, errOut := run(t, repo, "muster-plan.md", "node-1")
	if ok, n := gatesPassed(evs); code != 0 || !ok || n == 0 {
		t.Fatalf("first run: exit %d, gates passed %v (%d ran)\n%s", code, ok, n, errOut)
	}
	before := installs(t, "node_modules/left-pad/package.json")
	if len(before) == 0 {
		t.Fatal("no clone holds node_modules/left-pad")
	}

	if err := os.WriteFile(filepath.Join(repo, "second.md"), []byte("# Plan: second\n\n## [ ] notes: Write notes\nOwns: NOTES.md\n\nWrite NOTES.md.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commit(t, repo, "second plan")
	code, evs, errOut = run(t, repo, "second.md", "node-2")
	if ok, n := gatesPassed(evs); code != 0 || !ok || n == 0 {
		t.Fatalf("second run: exit %d, gates passed %v (%d ran)\n%s", code, ok, n, errOut)
	}
	after := installs(t, "node_modules/left-pad/package.json")
	for f, id := range after {
		if before[f] != id {
			t.Errorf("the second run installed again in %s (%s, was %q)", f, id, before[f])
		}
	}
}

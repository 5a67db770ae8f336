package reserve

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/muster-run/muster"
)

func TestPathsAndGateFiles(t *testing.T) {
	top := t.TempDir()
	for _, f := range []string{"ci/muster.toml", "plans/p.md", "prices.json", "bin/agent.sh", "scripts/check.sh",
		"scripts/unit.js", "Makefile", "package.json", "tools/lint.sh", "loop/check.sh"} {
		os.MkdirAll(filepath.Join(top, filepath.Dir(f)), 0o755)
		body := "x\n"
		if f == "package.json" {
			body = `{"scripts": {"test": "node scripts/unit.js && echo ok"}}`
		}
		os.WriteFile(filepath.Join(top, f), []byte(body), 0o644)
	}
	cfg := &muster.Config{Source: filepath.Join(top, "ci/muster.toml"),
		Run:       muster.RunConfig{PricesFile: filepath.Join(top, "prices.json")},
		Executors: []*muster.ExecutorSpec{{Command: []string{"./bin/agent.sh"}}, {Command: []string{"claude"}}, {Command: []string{"/usr/bin/env"}}},
		Gates:     []muster.GateSpec{{Command: "./tools/lint.sh --all"}, {Command: "npm test"}, {Command: "sh scripts/check.sh; make -s"}}}
	plan := &muster.Plan{Tasks: []*muster.Task{{Gates: []string{"go vet ./..."}, Loop: &muster.LoopSpec{Check: "bash loop/check.sh"}}}}
	got := Paths(top, cfg, filepath.Join(top, "plans/p.md"))
	if want := []string{"bin/agent.sh", "ci/muster.toml", "plans/p.md", "prices.json", "tools/lint.sh"}; !slices.Equal(got, want) {
		t.Errorf("paths %q, want %q", got, want)
	}
	got = GateFiles(top, cfg, plan)
	if want := []string{"Makefile", "loop/check.sh", "package.json", "scripts/check.sh", "scripts/unit.js", "tools/lint.sh"}; !slices.Equal(got, want) {
		t.Errorf("gate files %q, want %q", got, want)
	}
	// Outside the repository: nothing.
	if got := Paths(top, &muster.Config{Source: filepath.Join(t.TempDir(), "m.toml")}, "../plan.md"); len(got) != 0 {
		t.Errorf("outside: %q", got)
	}
}

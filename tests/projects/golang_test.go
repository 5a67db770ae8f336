package projects_test

import (
	"strings"
	"testing"
)

// A Go project runs green in muster's clones with the muster.toml
// muster init wrote ([setup] go mod download, gate go test ./...).
func TestGoProject(t *testing.T) {
	need(t, "go", "install Go")
	// A confined gate writes /tmp (its own) and [run] writable only: go's
	// work directory goes there.
	t.Setenv("TMPDIR", "/tmp")
	repo := project(t, map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.21\n",
		"calc.go":      "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n",
	})
	commit(t, repo, "calc")
	toml := muInit(t, repo)
	if !strings.Contains(toml, `commands = ["go mod download"]`) || !strings.Contains(toml, `test = "go test ./..."`) {
		t.Fatalf("muster init wrote:\n%s", toml)
	}
	commit(t, repo, "muster init")
	code, evs, errOut := run(t, repo, "muster-plan.md", "go-1")
	if ok, n := gatesPassed(evs); code != 0 || !ok || n == 0 {
		t.Fatalf("exit %d, gates passed %v (%d ran)\n%s", code, ok, n, errOut)
	}
}

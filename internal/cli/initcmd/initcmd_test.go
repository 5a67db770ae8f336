package initcmd

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDetectGates(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":         "module x\n",
		"package.json":   `{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}`,
		"pyproject.toml": "[tool.pytest.ini_options]\n",
		"Cargo.toml":     "[package]\n",
		"Makefile":       "build:\n\tcc x.c\ntest: build\n\t./t\n",
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	look := func(p string) (string, error) {
		if p == "cargo" {
			return "", errors.New("not found")
		}
		return "/usr/bin/" + p, nil
	}
	got := map[string]gateSpec{}
	for _, g := range detectGates(dir, look) {
		got[g.name] = g
	}
	if _, ok := got["npm"]; ok {
		t.Error("npm init's placeholder test script taken as a gate")
	}
	for _, want := range []gateSpec{{name: "test", command: "go test ./..."}, {name: "pytest", command: "pytest"}, {name: "make", command: "make test"},
		{name: "cargo", command: "cargo test", off: "cargo is not installed here"}} {
		if g := got[want.name]; g != want {
			t.Errorf("gate %s = %+v, want %+v", want.name, g, want)
		}
	}
	if len(got) != 4 {
		t.Errorf("gates %+v", got)
	}
}

package initcmd

import (
	"errors"
	"fmt"
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

// The setup init writes follows the lockfiles; a program not installed
// is written commented out.
func TestDetectSetup(t *testing.T) {
	look := func(p string) (string, error) {
		if p == "poetry" {
			return "", errors.New("not found")
		}
		return "/usr/bin/" + p, nil
	}
	for name, c := range map[string]struct {
		files []string
		want  []gateSpec
	}{
		"npm":       {[]string{"package.json", "package-lock.json"}, []gateSpec{{name: "node", command: "npm ci --no-audit --no-fund"}}},
		"no lock":   {[]string{"package.json"}, []gateSpec{{name: "node", command: "npm install --no-save --no-package-lock --no-audit --no-fund"}}},
		"pnpm":      {[]string{"package.json", "pnpm-lock.yaml"}, []gateSpec{{name: "node", command: "pnpm install --frozen-lockfile"}}},
		"yarn":      {[]string{"package.json", "yarn.lock"}, []gateSpec{{name: "node", command: "yarn install --frozen-lockfile"}}},
		"go, cargo": {[]string{"go.mod", "Cargo.toml"}, []gateSpec{{name: "go", command: "go mod download"}, {name: "cargo", command: "cargo fetch"}}},
		"uv":        {[]string{"uv.lock"}, []gateSpec{{name: "python", command: "uv sync --frozen"}}},
		"poetry":    {[]string{"poetry.lock"}, []gateSpec{{name: "python", command: "poetry install --no-root", off: "poetry is not installed here"}}},
		"nothing":   {[]string{"README.md"}, nil},
	} {
		dir := t.TempDir()
		for _, f := range c.files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := detectSetup(dir, look); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %+v, want %+v", name, got, c.want)
		}
	}
}

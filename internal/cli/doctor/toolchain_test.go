package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestToolchainWarnings(t *testing.T) {
	installed := map[string]string{"node": "v20.20.2\n", "go": "go1.21.5\n", "rustc": "rustc 1.70.0 (90c541806 2023-05-31)\n"}
	version := func(p string, _ ...string) (string, error) {
		if v, ok := installed[p]; ok {
			return v, nil
		}
		return "", errors.New("not found")
	}
	for name, c := range map[string]struct {
		files map[string]string
		want  string
	}{
		"engines miss":     {map[string]string{"package.json": `{"engines": {"node": ">=22"}}`}, "node 20.20.2 is installed; package.json's engines asks for node >=22"},
		"engines caret":    {map[string]string{"package.json": `{"engines": {"node": "^18.0.0 || ^22"}}`}, "asks for node ^18.0.0 || ^22"},
		"engines met":      {map[string]string{"package.json": `{"engines": {"node": ">=18 <21"}}`}, ""},
		"nvmrc miss":       {map[string]string{".nvmrc": "v22.1.0\n"}, "node 20.20.2 is installed; .nvmrc asks for node 22.1.0"},
		"nvmrc met":        {map[string]string{".nvmrc": "20\n"}, ""},
		"nvmrc lts":        {map[string]string{".nvmrc": "lts/*\n"}, ""},
		"go line miss":     {map[string]string{"go.mod": "module x\n\ngo 1.22.0\n"}, "go 1.21.5 is installed; go.mod asks for go 1.22.0"},
		"go line met":      {map[string]string{"go.mod": "module x\n\ngo 1.21\n"}, ""},
		"rust-toolchain":   {map[string]string{"rust-toolchain.toml": "[toolchain]\nchannel = \"1.75.0\"\n"}, "rustc 1.70.0 is installed; rust-toolchain asks for 1.75.0"},
		"rust stable":      {map[string]string{"rust-toolchain": "stable\n"}, ""},
		"engines, no node": {map[string]string{"package.json": `{"engines": {"deno": ">=2"}}`}, ""},
	} {
		dir := t.TempDir()
		for f, b := range c.files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got := strings.Join(ToolchainWarnings(dir, version), "\n")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
	}
}

package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

func TestSetupAndGateTables(t *testing.T) {
	t.Parallel()
	doc := `[executors.a]
kind = "command"
command = ["true"]

[gates]
lint = "npm run lint"

[gates.test]
command = "npm test"
junit = "reports/*.xml"

[setup]
network = "allowlist"
commands = ["npm ci", "go mod download"]

[setup.py]
command = "uv sync --frozen"
inputs = ["uv.lock"]
`
	cfg, probs := Parse("m.toml", []byte(doc))
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	if want := []muster.GateSpec{{Name: "lint", Command: "npm run lint", Line: 6}, {Name: "test", Command: "npm test", JUnit: "reports/*.xml", Line: 8}}; !reflect.DeepEqual(cfg.Gates, want) {
		t.Errorf("gates %+v", cfg.Gates)
	}
	if len(cfg.Setup) != 3 {
		t.Fatalf("setup %+v", cfg.Setup)
	}
	npm, gomod, py := cfg.Setup[0], cfg.Setup[1], cfg.Setup[2]
	if npm.Name != "npm" || npm.Command != "npm ci" || npm.Inputs[0] != "package-lock.json" || npm.Caches[0] != "~/.npm" || npm.Outputs[0] != "node_modules/" {
		t.Errorf("npm %+v", npm)
	}
	if gomod.Name != "go" || gomod.Inputs[0] != "go.sum" || gomod.Outputs != nil {
		t.Errorf("go %+v", gomod)
	}
	if py.Name != "py" || !reflect.DeepEqual(py.Inputs, []string{"uv.lock"}) || py.Caches[0] != "~/.cache/uv" || py.Outputs[0] != ".venv/" {
		t.Errorf("py %+v", py)
	}
}

// TestSetupNamedCommands: NAME = "command" in [setup] (as in [gates];
// ARCHITECTURE.md §2.4) is a step of that name, in file order with the
// other forms, with the defaults its program implies.
func TestSetupNamedCommands(t *testing.T) {
	t.Parallel()
	doc := `[setup]
npm = "npm ci"
commands = ["go mod download"]
py = "uv sync --frozen"
network = "open"
`
	cfg, probs := Parse("m.toml", []byte(doc))
	if len(probs) != 0 {
		t.Fatal(probs)
	}
	var got []string
	for _, st := range cfg.Setup {
		got = append(got, st.Name+"="+st.Command)
	}
	if want := []string{"npm=npm ci", "go=go mod download", "py=uv sync --frozen"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("setup %v, want %v", got, want)
	}
	npm := cfg.Setup[0]
	if npm.Line != 2 || npm.Inputs[0] != "package-lock.json" || npm.Outputs[0] != "node_modules/" {
		t.Errorf("npm %+v", npm)
	}
}

func TestSetupProblems(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		"[setup]\ncommand = [\"npm ci\"]\n":                `m.toml:2: unknown key "command" in [setup]; did you mean "commands"?`,
		"[setup.deps]\ncommand = \"npm ci\"\ninput = []\n": `m.toml:3: unknown key "input" in [setup.deps]; did you mean "inputs"?`,
		"[setup.deps]\ninputs = []\n":                      `setup deps: want a command`,
		"[gates.test]\njunit = \"r.xml\"\n":                `gate test: want a command`,
		"[setup]\ncommand = \"npm ci\"\n":                  `m.toml:2: unknown key "command" in [setup]; did you mean "commands"?`,
		"[setup]\nnpm = 3\n":                               `m.toml:2: setup npm: want a command string, such as npm = "npm ci"`,
		"[setup]\nnpm = \" \"\n":                           `m.toml:2: setup npm: want a command string, such as npm = "npm ci"`,
	} {
		_, probs := Parse("m.toml", []byte(doc))
		if len(probs) == 0 || !strings.Contains(probs[0].String(), want) {
			t.Errorf("%q: %v, want %q", doc, probs, want)
		}
	}
}

package initcmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// detectSetup finds the commands that install the repository's
// dependencies in a clone, from its lockfiles and manifests: what a gate
// needs before it can run in muster's fresh clones. A command whose
// program is not installed is written commented out.
func detectSetup(top string, look func(string) (string, error)) []gateSpec {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(top, name))
		return err == nil
	}
	var out []gateSpec
	add := adder(&out, look)
	switch {
	case !has("package.json"):
	case has("pnpm-lock.yaml"):
		add("node", "pnpm install --frozen-lockfile", "pnpm")
	case has("yarn.lock") && has(".yarnrc.yml"):
		add("node", "yarn install --immutable", "yarn")
	case has("yarn.lock"):
		add("node", "yarn install --frozen-lockfile", "yarn")
	case has("package-lock.json") || has("npm-shrinkwrap.json"):
		add("node", "npm ci --no-audit --no-fund", "npm")
	default:
		// No lockfile: install without writing one into the clone (it
		// would count as the agent's change).
		add("node", "npm install --no-save --no-package-lock --no-audit --no-fund", "npm")
	}
	if has("go.mod") {
		add("go", "go mod download", "go")
	}
	if has("Cargo.toml") {
		add("cargo", "cargo fetch", "cargo")
	}
	switch {
	case has("uv.lock"):
		add("python", "uv sync --frozen", "uv")
	case has("poetry.lock"):
		add("python", "poetry install --no-root", "poetry")
	}
	return out
}

// pytestCommand is how a gate runs pytest here: pytest, Debian's
// pytest-3, or through uv or poetry when the project uses one.
func pytestCommand(top string, look func(string) (string, error)) (command, program string) {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(top, name))
		return err == nil
	}
	switch {
	case has("uv.lock"):
		return "uv run pytest", "uv"
	case has("poetry.lock"):
		return "poetry run pytest", "poetry"
	}
	if _, err := look("pytest"); err == nil {
		return "pytest", "pytest"
	}
	if _, err := look("pytest-3"); err == nil {
		return "pytest-3", "pytest-3"
	}
	return "pytest", "pytest"
}

// setupText is the [setup] table of muster.toml.
func setupText(steps []gateSpec) string {
	var b strings.Builder
	b.WriteString("\n[setup]                     # installs dependencies in every clone (docs/dependencies.md)\n")
	if len(steps) == 0 {
		b.WriteString("# commands = [\"npm ci\"]     # none found: add what installs your dependencies\n")
		return b.String()
	}
	b.WriteString("network = \"open\"            # package registries; narrow with network = \"allowlist\" and allow_hosts\n")
	var on []string
	for _, s := range steps {
		if s.off != "" {
			fmt.Fprintf(&b, "# %s: %q   # %s\n", s.name, s.command, s.off)
			continue
		}
		on = append(on, fmt.Sprintf("%q", s.command))
	}
	if len(on) > 0 {
		fmt.Fprintf(&b, "commands = [%s]\n", strings.Join(on, ", "))
	}
	return b.String()
}

// goBuildCache is go env GOCACHE for a Go project, "" otherwise.
func goBuildCache(top string, look func(string) (string, error)) string {
	if _, err := os.Stat(filepath.Join(top, "go.mod")); err != nil {
		return ""
	}
	goBin, err := look("go")
	if err != nil {
		return ""
	}
	out, err := exec.Command(goBin, "env", "GOCACHE").Output()
	if err != nil {
		return ""
	}
	if c := strings.TrimSpace(string(out)); filepath.IsAbs(c) {
		return c
	}
	return ""
}

// adder appends a command to out, commented out ("off") when its program
// is not installed here.
func adder(out *[]gateSpec, look func(string) (string, error)) func(name, command, program string) {
	return func(name, command, program string) {
		g := gateSpec{name: name, command: command}
		if _, err := look(program); err != nil {
			g.off = program + " is not installed here"
		}
		*out = append(*out, g)
	}
}

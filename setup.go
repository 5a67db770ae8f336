package muster

import (
	"path/filepath"
	"slices"
	"strings"
)

// SetupStep is one [setup] command: it installs a project's dependencies
// in a clone before the clone's first task, and again when a task
// changes one of its inputs. Its key is the hash of its command and of
// each input present; a clone whose key is unchanged (and whose outputs
// are as setup left them) is not set up again.
type SetupStep struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	// Inputs are globs, relative to the clone, of the lockfiles and
	// manifests the step installs from.
	Inputs []string `json:"inputs,omitempty"`
	// Caches are the package caches the step may write (agents and
	// gates read them only); "~/" is the home directory.
	Caches []string `json:"caches,omitempty"`
	// Outputs are what the step makes in the clone ("node_modules/",
	// ".venv/"): kept when the clone is cleaned between tasks and runs,
	// recorded after setup and checked before each gate.
	Outputs []string `json:"outputs,omitempty"`
	Line    int      `json:"-"`
}

// toolchain is what a setup command's program implies.
type toolchain struct {
	programs                []string
	inputs, caches, outputs []string
}

// toolchains are the package managers whose inputs, caches and outputs
// muster knows: a [setup] command gets them unless its table says
// otherwise. Lockfiles are looked for at the top and one directory down
// (a small monorepo).
var toolchains = []toolchain{
	{[]string{"npm", "npx"}, both("package-lock.json", "package.json"), []string{"~/.npm"}, []string{"node_modules/"}},
	{[]string{"pnpm"}, both("pnpm-lock.yaml", "package.json"), []string{"~/.local/share/pnpm/store", "~/.cache/pnpm"}, []string{"node_modules/"}},
	{[]string{"yarn"}, both("yarn.lock", "package.json"), []string{"~/.cache/yarn", "~/.yarn/berry/cache"}, []string{"node_modules/"}},
	{[]string{"go"}, both("go.sum", "go.mod"), []string{"~/go/pkg/mod", "~/.cache/go-build"}, nil},
	{[]string{"cargo"}, both("Cargo.lock", "Cargo.toml"), []string{"~/.cargo/registry", "~/.cargo/git"}, []string{"target/"}},
	{[]string{"uv"}, both("uv.lock", "pyproject.toml"), []string{"~/.cache/uv"}, []string{".venv/"}},
	{[]string{"poetry"}, both("poetry.lock", "pyproject.toml"), []string{"~/.cache/pypoetry"}, []string{".venv/"}},
	{[]string{"pip", "pip3", "python", "python3"}, both("requirements*.txt", "pyproject.toml"), []string{"~/.cache/pip"}, []string{".venv/"}},
	{[]string{"bundle"}, both("Gemfile.lock", "Gemfile"), []string{"~/.bundle/cache"}, []string{"vendor/bundle/"}},
}

func both(names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n, "*/"+n)
	}
	return out
}

// SetupDefaults returns the inputs, caches and outputs a setup command
// implies by its program (its first word, or the word after "cd x &&").
// A program muster does not know gets every known lockfile as input.
func SetupDefaults(command string) (inputs, caches, outputs []string) {
	for _, part := range strings.FieldsFunc(command, func(r rune) bool { return r == '&' || r == ';' || r == '|' }) {
		f := strings.Fields(part)
		if len(f) == 0 {
			continue
		}
		for _, tc := range toolchains {
			for _, p := range tc.programs {
				if f[0] == p {
					return tc.inputs, tc.caches, tc.outputs
				}
			}
		}
	}
	for _, tc := range toolchains {
		inputs = append(inputs, tc.inputs...)
	}
	return inputs, nil, nil
}

// CleanKeep is what a clone keeps when it is cleaned between tasks and
// runs: [run] keep and every setup step's outputs.
func (c *Config) CleanKeep() []string {
	out := append([]string(nil), c.Run.Keep...)
	for _, st := range c.Setup {
		for _, o := range st.Outputs {
			if !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	return out
}

// SetupCaches are the setup steps' caches as absolute paths, "~/"
// expanded to home; relative ones are left out.
func (c *Config) SetupCaches(home string) []string {
	var out []string
	for _, st := range c.Setup {
		for _, p := range st.Caches {
			if rest, ok := strings.CutPrefix(p, "~/"); ok {
				if home == "" {
					continue
				}
				p = filepath.Join(home, rest)
			}
			if filepath.IsAbs(p) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// SetupOutputs are the outputs of the setup steps (node_modules/, .venv/)
// present in the clone dir, which an agent sees read-only where the
// sandbox's namespaces exist (ARCHITECTURE §8.5), on a fleet worker as
// in a local run: no agent makes a later gate pass by editing the test
// runner setup installed. Only real
// directories or files reached without a symbolic link count: a link an
// agent planted there must not make muster bind its target back into
// the sandbox (a hidden path, read-only, is still a hidden path shown).
func SetupOutputs(steps []SetupStep, dir string) []string {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, st := range steps {
		for _, o := range st.Outputs {
			if strings.TrimSuffix(o, "/") == "target" {
				continue // cargo's build directory: the agent's own builds write it
			}
			p := filepath.Join(root, filepath.FromSlash(o))
			if !strings.HasPrefix(p, root+string(filepath.Separator)) {
				continue
			}
			if r, err := filepath.EvalSymlinks(p); err != nil || r != p {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

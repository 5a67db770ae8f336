// Package reserve names the repository files a run reserves: the files
// no change may touch whatever a task's Owns says (the config in use,
// the plan, the prices file, the programs the config names by relative
// path), and the files the gates name, which a task changes only when
// its Owns lists them by name (docs/security.md, "Reserved files").
package reserve

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/muster-run/muster"
)

// Paths returns the run's reserved repository paths besides
// muster.ReservedPaths, relative to the repository's top and sorted: the
// config file in use, the plan file, the prices file (each when it lies
// in the repository), every executor's program and every [gates]
// command's program named by a relative path.
func Paths(top string, cfg *muster.Config, planPath string) []string {
	var out []string
	addFile := func(p string) {
		if r := inRepo(top, p); r != "" {
			out = append(out, r)
		}
	}
	addFile(cfg.Source)
	addFile(planPath)
	addFile(cfg.Run.PricesFile)
	for _, e := range cfg.Executors {
		if len(e.Command) > 0 {
			out = append(out, program(e.Command[0])...)
		}
	}
	for _, g := range cfg.Gates {
		if w := words(g.Command); len(w) > 0 {
			out = append(out, program(w[0])...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// GateFiles returns the repository files the gates name, sorted: the
// config's [gates], every task's Gate: and Loop: check. A file a gate
// names is an argument that is a file of the repository (sh
// scripts/check.sh), the Makefile make reads, the package.json npm,
// yarn, pnpm and bun read (and the files its script names), and the
// like for just, task, rake, tox and cargo.
func GateFiles(top string, cfg *muster.Config, plan *muster.Plan) []string {
	var cmds []string
	for _, g := range cfg.Gates {
		cmds = append(cmds, g.Command)
	}
	if plan != nil {
		for _, t := range plan.Tasks {
			cmds = append(cmds, t.Gates...)
			if t.Loop != nil {
				cmds = append(cmds, t.Loop.Check)
			}
		}
	}
	var out []string
	for _, c := range cmds {
		out = append(out, named(top, c, true)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// buildFiles are the files a build tool reads by itself.
var buildFiles = map[string][]string{
	"make": {"Makefile", "makefile", "GNUmakefile"}, "gmake": {"Makefile", "makefile", "GNUmakefile"},
	"npm": {"package.json"}, "yarn": {"package.json"}, "pnpm": {"package.json"}, "bun": {"package.json"}, "npx": {"package.json"},
	"just": {"justfile", "Justfile", ".justfile"}, "task": {"Taskfile.yml", "Taskfile.yaml"},
	"rake": {"Rakefile"}, "tox": {"tox.ini"}, "cargo": {"Cargo.toml"},
}

// named returns the repository files a shell command names: its words
// that are files of the repository, and the files of the build tools it
// runs. With scripts, the package.json scripts it runs are read too.
func named(top, command string, scripts bool) []string {
	var out []string
	ws := words(command)
	for i, w := range ws {
		if f := existing(top, w); f != "" {
			out = append(out, f)
		}
		tool := path.Base(w)
		for _, f := range buildFiles[tool] {
			if r := existing(top, f); r != "" {
				out = append(out, r)
			}
		}
		if scripts && buildFiles[tool] != nil && buildFiles[tool][0] == "package.json" {
			out = append(out, packageScript(top, ws[i+1:])...)
		}
	}
	return out
}

// packageScript returns the files named by the package.json script that
// args (after npm, yarn...) run: "test", "run NAME", or "NAME".
func packageScript(top string, args []string) []string {
	if len(args) == 0 {
		return nil
	}
	name := args[0]
	if (name == "run" || name == "run-script") && len(args) > 1 {
		name = args[1]
	}
	b, err := os.ReadFile(filepath.Join(top, "package.json"))
	if err != nil || len(b) > 1<<20 {
		return nil
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pkg) != nil || pkg.Scripts[name] == "" {
		return nil
	}
	return named(top, pkg.Scripts[name], false)
}

// words splits a shell command into words at blanks and shell operators,
// with quotes removed: enough to find the files it names.
func words(command string) []string {
	return strings.FieldsFunc(command, func(r rune) bool {
		return strings.ContainsRune(" \t\n;&|()<>`'\"", r)
	})
}

// program returns the repository path of a program named by a relative
// path (with a slash, as ./agent.sh: resolved in each task's worktree).
func program(p string) []string {
	if !strings.Contains(p, "/") || filepath.IsAbs(p) {
		return nil
	}
	r := path.Clean(filepath.ToSlash(p))
	if r == "." || r == ".." || strings.HasPrefix(r, "../") {
		return nil
	}
	return []string{r}
}

// existing returns w as a clean repository path when it names a regular
// file of the repository at top (not absolute, not leaving it).
func existing(top, w string) string {
	if w == "" || filepath.IsAbs(w) || strings.HasPrefix(w, "-") {
		return ""
	}
	r := path.Clean(filepath.ToSlash(w))
	if r == "." || r == ".." || strings.HasPrefix(r, "../") {
		return ""
	}
	fi, err := os.Lstat(filepath.Join(top, filepath.FromSlash(r)))
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return r
}

// inRepo returns p (relative to the working directory, or absolute) as
// a path relative to the repository's top when it lies inside it.
func inRepo(top, p string) string {
	if p == "" {
		return ""
	}
	t, err := filepath.Abs(top)
	if err != nil {
		return ""
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	if rt, err := filepath.EvalSymlinks(t); err == nil {
		t = rt
	}
	if ra, err := filepath.EvalSymlinks(a); err == nil {
		a = ra
	}
	rel, err := filepath.Rel(t, a)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return filepath.ToSlash(rel)
}

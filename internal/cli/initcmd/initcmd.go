// Package initcmd is the muster init command: in a repository without a
// muster.toml, it writes one for the agents installed here (a simulated
// crew when there are none), with the repository's likely gates, and a
// small sample plan that validates.
package initcmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/config"
	"github.com/muster-run/muster/doctor"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/planfile"
)

// PlanFile is the sample plan init writes at the repository's top.
const PlanFile = "muster-plan.md"

// Options are the parsed command line of muster init.
type Options struct {
	Repo  string
	Force bool
	// Check finds the installed agents (doctor.Check by default).
	Check func(ctx context.Context) []doctor.Result
	// LookPath finds a gate's program (exec.LookPath by default).
	LookPath func(string) (string, error)
}

// NewCmd returns muster init.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a muster.toml for the agents installed here, and a sample plan",
		Long: `Write muster.toml at the repository's top: a crew of the agent CLIs installed
here that have credentials (found as muster doctor finds them; a simulated
crew when there are none, labelled as such), and the repository's likely
gates (go test, npm test, pytest, cargo test, make test, when their files are
present). Also write ` + PlanFile + `, a small sample plan that validates. Prints
what it wrote and the command to run next. Refuses to overwrite either file
(exit 2) unless --force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Run(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "repository (default: current directory)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite muster.toml and "+PlanFile)
	return cmd
}

// Run writes the files.
func Run(ctx context.Context, io *cmdutil.IOStreams, opts *Options) error {
	repo, err := cmdutil.OpenRepo(ctx, opts.Repo)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(repo.Top, config.FileName)
	planPath := filepath.Join(repo.Top, PlanFile)
	if !opts.Force {
		for _, p := range []string{cfgPath, planPath} {
			if _, err := os.Lstat(p); err == nil {
				return cmdutil.Invalid("%s exists already: muster init does not overwrite it (--force does)", p)
			}
		}
	}
	check := opts.Check
	if check == nil {
		check = func(ctx context.Context) []doctor.Result { return doctor.Check(ctx, nil, doctor.Options{}) }
	}
	look := opts.LookPath
	if look == nil {
		look = exec.LookPath
	}
	crew := pickCrew(check(ctx))
	gates := detectGates(repo.Top, look)
	setup := detectSetup(repo.Top, look)
	text := configText(crew, gates) + setupText(setup)
	if cache := goBuildCache(repo.Top, look); cache != "" {
		// go test writes its build cache: a confined gate may write only
		// what [run] writable names.
		text = strings.Replace(text, "[run]\n", "[run]\nwritable = ["+fmt.Sprintf("%q", cache)+"]   # go test's build cache (gates are confined)\n", 1)
	}
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		return cmdutil.Env("write %s: %w", cfgPath, err)
	}
	if err := os.WriteFile(planPath, []byte(samplePlan), 0o644); err != nil {
		return cmdutil.Env("write %s: %w", planPath, err)
	}
	// What was written must load and validate, as run would check it.
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return cmdutil.Env("internal error: the muster.toml init wrote does not load: %w", err)
	}
	if _, probs, err := planfile.Check(planPath, cfg, planfile.Options{}); err != nil || len(probs.Errors()) > 0 {
		return cmdutil.Env("internal error: the sample plan init wrote does not validate: %v%v", err, probs.Errors()) // flattened: either may be nil
	}
	w := io.ErrOut
	fmt.Fprintf(w, "wrote %s\n", cfgPath)
	for _, m := range crew.members {
		fmt.Fprintf(w, "  executor %-12s kind %s, %d clones, %s\n", m.name, m.kind, m.clones, m.note)
	}
	for _, s := range crew.skipped {
		fmt.Fprintf(w, "  not used     %s\n", s)
	}
	for _, g := range gates {
		state := ""
		if g.off != "" {
			state = " (commented out: " + g.off + ")"
		}
		fmt.Fprintf(w, "  gate %-8s %s%s\n", g.name, g.command, state)
	}
	for _, g := range setup {
		state := ""
		if g.off != "" {
			state = " (commented out: " + g.off + ")"
		}
		fmt.Fprintf(w, "  setup %-7s %s%s\n", g.name, g.command, state)
	}
	if len(gates) == 0 {
		fmt.Fprintln(w, "  no gates: none of go.mod, package.json, pytest, Cargo.toml, a Makefile test target found; add them under [gates]")
	}
	fmt.Fprintf(w, "wrote %s (a sample plan of 2 tasks)\n", planPath)
	fmt.Fprintf(w, "next: muster run --dry-run %s   (then: muster run %s)\n", PlanFile, PlanFile)
	return nil
}

// member is one executor init writes.
type member struct {
	name   string
	kind   muster.ExecKind
	clones int
	roles  []string
	note   string
}

// pickCrew keeps the agent CLIs found with credentials, each as coder and
// reviewer on two clones; with none, a simulated crew.
func pickCrew(results []doctor.Result) crewResult {
	var c crewResult
	for _, r := range results {
		if r.Executor != "" || r.Kind == muster.ExecSim || r.Kind == muster.ExecCommand {
			continue
		}
		switch {
		case !r.Found:
		case r.Credentials == doctor.CredMissing:
			c.skipped = append(c.skipped, fmt.Sprintf("%s (%s found, no credentials: set %s or log in)", r.Kind, r.Binary, r.CredentialVar))
		case !r.OK():
			c.skipped = append(c.skipped, fmt.Sprintf("%s (%s)", r.Kind, strings.Join(r.Problems, "; ")))
		default:
			note := "installed"
			if r.Version != "" {
				note = r.Version
			}
			c.members = append(c.members, member{name: shortName(r.Kind), kind: r.Kind, clones: 2, roles: []string{string(muster.RoleCoder), string(muster.RoleReviewer)}, note: note})
		}
	}
	if len(c.members) == 0 {
		c.members = []member{{name: "sim", kind: muster.ExecSim, clones: 2, roles: []string{string(muster.RoleCoder), string(muster.RoleReviewer)},
			note: "SIMULATED: no agent CLI with credentials was found; it edits files without any model"}}
		c.sim = true
	}
	return c
}

// crewResult is the crew init writes and the agents it left out.
type crewResult struct {
	members []member
	skipped []string
	sim     bool
}

func shortName(kind muster.ExecKind) string {
	if kind == muster.ExecClaudeCode {
		return "claude"
	}
	return string(kind)
}

// gateSpec is one gate init writes; off says why it is commented out.
type gateSpec struct {
	name, command, off string
}

var makeTest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^test\s*:`) })

// detectGates finds the repository's likely test commands from the files
// at its top. A gate whose program is not installed is written commented
// out (a gate that cannot start would fail every task).
func detectGates(top string, look func(string) (string, error)) []gateSpec {
	has := func(name string) bool {
		_, err := os.Stat(filepath.Join(top, name))
		return err == nil
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(top, name))
		if err != nil {
			return ""
		}
		return string(b)
	}
	var out []gateSpec
	add := adder(&out, look)
	if has("go.mod") {
		add("test", "go test ./...", "go")
	}
	// npm init's placeholder test script fails on purpose: not a gate.
	if pj := read("package.json"); strings.Contains(pj, `"test"`) && !strings.Contains(pj, "no test specified") {
		add("npm", "npm test", "npm")
	}
	if has("pytest.ini") || has("conftest.py") || strings.Contains(read("pyproject.toml"), "pytest") ||
		strings.Contains(read("setup.cfg"), "[tool:pytest]") || strings.Contains(read("tox.ini"), "[pytest]") {
		cmd, program := pytestCommand(top, look)
		add("pytest", cmd, program)
	}
	if has("Cargo.toml") {
		add("cargo", "cargo test", "cargo")
	}
	for _, mk := range []string{"Makefile", "makefile", "GNUmakefile"} {
		if makeTest().MatchString(read(mk)) {
			add("make", "make test", "make")
			break
		}
	}
	return out
}

// configText is the commented muster.toml.
func configText(c crewResult, gates []gateSpec) string {
	var b strings.Builder
	b.WriteString("# muster.toml, written by muster init. Every key: docs/planfile.md (\"muster.toml\").\n")
	b.WriteString("# Check the crew with: muster doctor\n\n")
	b.WriteString("[run]\n")
	b.WriteString("max_parallel = 2          # coders working at once (reviewers and gates do not count)\n")
	b.WriteString("on_failure = \"continue\"   # or \"stop\": after a failure, start nothing new\n")
	if !c.sim {
		b.WriteString("budget_usd = 5.0          # the run stops starting work past this spend\n")
	}
	b.WriteString("\n")
	if c.sim {
		b.WriteString("# SIMULATED CREW: no agent CLI with credentials was found here (muster doctor\n")
		b.WriteString("# says why). The sim edits the files a task owns without any model, so a run\n")
		b.WriteString("# shows how muster works but does no real work. Install an agent, for example\n")
		b.WriteString("#   npm install -g @anthropic-ai/claude-code   (then log in, or set ANTHROPIC_API_KEY)\n")
		b.WriteString("# and run muster init --force again, or replace this table by hand.\n")
	}
	for _, s := range c.skipped {
		b.WriteString("# not used: " + s + "\n")
	}
	for _, m := range c.members {
		fmt.Fprintf(&b, "[executors.%s]\n", m.name)
		fmt.Fprintf(&b, "kind = %q\n", m.kind)
		fmt.Fprintf(&b, "clones = %d\n", m.clones)
		fmt.Fprintf(&b, "roles = [%s]\n", quoteList(m.roles))
		if m.kind == muster.ExecSim {
			b.WriteString("speed = 0.2               # scales the simulated delays\n")
		} else {
			b.WriteString("# model = \"...\"           # the agent's default model unless set\n")
			b.WriteString("# timeout = \"20m\"\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("[gates]                     # run on every task's change, in this order\n")
	if len(gates) == 0 {
		b.WriteString("# test = \"make test\"       # none found: add your build and test commands\n")
	}
	for _, g := range gates {
		if g.off != "" {
			fmt.Fprintf(&b, "# %s = %q   # %s\n", g.name, g.command, g.off)
			continue
		}
		fmt.Fprintf(&b, "%s = %q\n", g.name, g.command)
	}
	return b.String()
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// samplePlan is the plan init writes: two small tasks, the second after
// the first, each owning one new file.
const samplePlan = `# Plan: sample

A sample plan written by muster init: edit it into your own, or start
afresh (the format: docs/planfile.md in muster's repository). Everything
before the first task is the brief, which every task's prompt gets.

## [ ] notes: Write a short overview of this repository
Owns: MUSTER-OVERVIEW.md

Read the repository and write MUSTER-OVERVIEW.md: what it is for, how it is
laid out (the main directories), and how to build and test it, in under 40
lines.

## [ ] questions: List open questions about the repository
After: notes
Owns: MUSTER-QUESTIONS.md

Using MUSTER-OVERVIEW.md, write MUSTER-QUESTIONS.md: up to five questions a
new contributor would ask that the repository does not answer yet.
`

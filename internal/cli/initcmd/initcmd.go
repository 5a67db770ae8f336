// Package initcmd is the muster init command: in a repository without a
// muster.toml, it writes one for the agents installed here (a simulated
// crew when there are none), with the repository's likely gates, and a
// small sample plan that validates.
package initcmd

import (
	"context"
	"fmt"
	"io"
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
	// Config is where the config goes (--config; default muster.toml at
	// the repository's top), relative to the current directory as run
	// and validate read it.
	Config string
	JSON   bool
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
		Long: `Write muster.toml at the repository's top (or where --config says): a crew of
the agent CLIs installed here that have credentials (found as muster doctor
finds them; a simulated crew when there are none, labelled as such), and the
repository's likely gates (go test, npm test, pytest, cargo test, make test,
when their files are present). Also write ` + PlanFile + `, a small sample plan
that validates. Prints what it wrote and the command to run next (with --json,
as one object on stdout). Refuses to overwrite either file (exit 2) unless
--force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Run(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "repository (default: current directory)")
	cmd.Flags().StringVar(&opts.Config, "config", "", "where to write the config (default: muster.toml at the repository's top)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "say what was written as one JSON object on stdout")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite the config and "+PlanFile)
	return cmd
}

// written is what init wrote, for people and for --json.
type written struct {
	Config    string         `json:"config"`
	Plan      string         `json:"plan"`
	Executors []writtenAgent `json:"executors"`
	Skipped   []string       `json:"skipped"`
	Gates     []writtenStep  `json:"gates"`
	Setup     []writtenStep  `json:"setup"`
	Next      string         `json:"next"`
}

type writtenAgent struct {
	Name   string          `json:"name"`
	Kind   muster.ExecKind `json:"kind"`
	Clones int             `json:"clones"`
	Note   string          `json:"note"`
}

// writtenStep is a gate or setup step; Off says why it is commented out.
type writtenStep struct {
	Name    string `json:"name"`
	Command string `json:"command"`
	Off     string `json:"off,omitempty"`
}

// Run writes the files.
func Run(ctx context.Context, io *cmdutil.IOStreams, opts *Options) error {
	repo, err := cmdutil.OpenRepo(ctx, opts.Repo)
	if err != nil {
		return err
	}
	w, err := targets(repo, opts)
	if err != nil {
		return err
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
	if err := writeChecked(w.Config, text, w.Plan); err != nil {
		return err
	}
	w.fill(crew, gates, setup)
	if opts.JSON {
		return cmdutil.WriteJSON(io.Out, w)
	}
	w.print(io.ErrOut)
	return nil
}

// targets says where the files go. It refuses to overwrite them without
// --force, and a --config in a directory that is not there or naming a
// directory.
func targets(repo *cmdutil.Repo, opts *Options) (*written, error) {
	w := &written{Config: filepath.Join(repo.Top, config.FileName), Plan: filepath.Join(repo.Top, PlanFile),
		Next: "muster run --dry-run " + PlanFile}
	if opts.Config != "" {
		abs, err := filepath.Abs(opts.Config)
		if err != nil {
			return nil, cmdutil.Invalid("--config %s: %w", opts.Config, err)
		}
		if fi, err := os.Stat(filepath.Dir(abs)); err != nil || !fi.IsDir() {
			return nil, cmdutil.Invalid("--config %s: directory %s is not there: create it first", opts.Config, filepath.Dir(abs))
		}
		if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
			return nil, cmdutil.Invalid("--config %s is a directory: name the file to write", opts.Config)
		}
		w.Config = abs
		w.Next = "muster run --dry-run --config " + opts.Config + " " + PlanFile
	}
	if !opts.Force {
		for _, p := range []string{w.Config, w.Plan} {
			if _, err := os.Lstat(p); err == nil {
				return nil, cmdutil.Invalid("%s exists already: muster init does not overwrite it (--force does)", p)
			}
		}
	}
	return w, nil
}

// writeChecked writes the config and the sample plan and checks that
// they load and validate, as run would check them.
func writeChecked(cfgPath, text, planPath string) error {
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		return cmdutil.Env("write %s: %w", cfgPath, err)
	}
	if err := os.WriteFile(planPath, []byte(samplePlan), 0o644); err != nil {
		return cmdutil.Env("write %s: %w", planPath, err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return cmdutil.Env("internal error: the muster.toml init wrote does not load: %w", err)
	}
	if _, probs, err := planfile.Check(planPath, cfg, planfile.Options{}); err != nil || len(probs.Errors()) > 0 {
		return cmdutil.Env("internal error: the sample plan init wrote does not validate: %v%v", err, probs.Errors()) // flattened: either may be nil
	}
	return nil
}

// fill records the crew, gates and setup that were written.
func (w *written) fill(crew crewResult, gates, setup []gateSpec) {
	w.Executors, w.Skipped = []writtenAgent{}, append([]string{}, crew.skipped...)
	for _, m := range crew.members {
		w.Executors = append(w.Executors, writtenAgent{Name: m.name, Kind: m.kind, Clones: m.clones, Note: m.note})
	}
	w.Gates, w.Setup = steps(gates), steps(setup)
}

func steps(specs []gateSpec) []writtenStep {
	out := []writtenStep{}
	for _, g := range specs {
		out = append(out, writtenStep{Name: g.name, Command: g.command, Off: g.off})
	}
	return out
}

// print says what was written, for people.
func (w *written) print(out io.Writer) {
	fmt.Fprintf(out, "wrote %s\n", w.Config)
	for _, m := range w.Executors {
		fmt.Fprintf(out, "  executor %-12s kind %s, %d clones, %s\n", m.Name, m.Kind, m.Clones, m.Note)
	}
	for _, s := range w.Skipped {
		fmt.Fprintf(out, "  not used     %s\n", s)
	}
	for _, g := range w.Gates {
		fmt.Fprintf(out, "  gate %-8s %s%s\n", g.Name, g.Command, offNote(g.Off))
	}
	for _, g := range w.Setup {
		fmt.Fprintf(out, "  setup %-7s %s%s\n", g.Name, g.Command, offNote(g.Off))
	}
	if len(w.Gates) == 0 {
		fmt.Fprintln(out, "  no gates: none of go.mod, package.json, pytest, Cargo.toml, a Makefile test target found; add them under [gates]")
	}
	fmt.Fprintf(out, "wrote %s (a sample plan of 2 tasks)\n", w.Plan)
	fmt.Fprintf(out, "next: %s   (then: %s)\n", w.Next, strings.Replace(w.Next, " --dry-run", "", 1))
}

func offNote(off string) string {
	if off == "" {
		return ""
	}
	return " (commented out: " + off + ")"
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

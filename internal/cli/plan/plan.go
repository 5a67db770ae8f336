// Package plan is the muster plan command: a planner agent writes a plan
// for a goal, muster validates it (asking again with the problems, up to
// --tries) and writes it. Make is the same planning for run --goal and
// the MCP server.
package plan

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/planner"
)

// Options are the command's flags.
type Options struct {
	Flags    preflight.Flags // --repo, --config, --crew, --approve
	Executor string
	Output   string
	Tries    int
	Force    bool
	JSON     bool
}

// NewCmd returns muster plan.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "plan GOAL",
		Short: "A planner agent writes a plan for a goal; muster validates it",
		Long: `Ask a planner agent for a plan that achieves GOAL. The planner (--executor, else
the first executor with roles = ["planner"], else the first coder) reads a clone
of the repository at HEAD with read authority; its prompt holds the goal, the
plan format and what makes tasks parallel, the repository's files, gates and
README, and the crew. It writes the plan to the file named by MUSTER_PLAN_OUT,
or gives it as its final answer. muster checks it as muster validate does and,
on problems, asks again with them listed, up to --tries.

A valid plan is written to -o FILE (default plan.md; an existing file is kept
unless --force) with a summary: tasks, the critical path, how many can run at
once on this crew, and what the budgets say it may cost. The planner's usage
is journaled as a plan session (muster runs lists it; muster report SESSION
shows it, role planner).

Exit status: 0 a plan was written, 2 bad input or no valid plan after the
last try (nothing is written), 3 environment error, 130 interrupted.`,
		Example: `  muster plan "Add a /healthz endpoint with a test"
  muster plan "Port the CLI to cobra" --executor claude -o port.md --tries 5
  muster plan "Split report.go" --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, io, o, args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Flags.Repo, "repo", "", "repository (default: current directory)")
	fs.StringVar(&o.Flags.Config, "config", "", "config file (default: muster.toml at the repository root, if present)")
	fs.StringArrayVar(&o.Flags.Crew, "crew", nil, "add or override an executor: NAME=KIND[:CLONES] (repeatable)")
	fs.StringArrayVar(&o.Flags.Approve, "approve", nil, "approve an authority the plan may request (e.g. shell)")
	fs.StringVar(&o.Executor, "executor", "", "the executor that plans (default: the first with role planner, else the first coder)")
	fs.StringVarP(&o.Output, "output", "o", "plan.md", "the plan file to write")
	fs.IntVar(&o.Tries, "tries", planner.DefaultTries, "how many times to ask the planner before giving up")
	fs.BoolVar(&o.Force, "force", false, "replace the output file if it exists")
	fs.BoolVar(&o.JSON, "json", false, "print the outcome as one JSON object on stdout")
	return cmd
}

// MaxTries caps --tries, as the MCP server's plan tool caps its tries.
const MaxTries = 10

func run(cmd *cobra.Command, io *cmdutil.IOStreams, o *Options, goal string) error {
	if strings.TrimSpace(goal) == "" {
		return cmdutil.FlagErrorf("the goal is empty: say what the plan should achieve")
	}
	if o.Tries < 1 {
		return cmdutil.FlagErrorf("--tries must be 1 or more, not %d", o.Tries)
	}
	if o.Tries > MaxTries {
		return cmdutil.FlagErrorf("--tries %d: the cap is %d (each try is a paid planner run)", o.Tries, MaxTries)
	}
	if o.Output == "" {
		return cmdutil.FlagErrorf("-o needs a file name")
	}
	ctx := cmd.Context()
	repo, err := cmdutil.OpenRepo(ctx, o.Flags.Repo)
	if err != nil {
		return err
	}
	cfg, err := preflight.LoadConfig(repo, &o.Flags)
	if err != nil {
		return err
	}
	out, err := Make(ctx, repo, cfg, Request{Goal: goal, Executor: o.Executor, Output: o.Output, Force: o.Force, Tries: o.Tries, Log: io.ErrOut})
	if err != nil {
		return err
	}
	if o.JSON {
		if err := cmdutil.WriteJSON(io.Out, JSON(out)); err != nil {
			return cmdutil.Env("write: %w", err)
		}
	}
	if !out.Valid() {
		fmt.Fprintf(io.ErrOut, "no valid plan after %d tries; nothing written. The last plan's problems:\n", out.Tries)
		preflight.PrintProblems(io.ErrOut, out.Problems)
		return &cmdutil.Silent{Err: cmdutil.Invalid("no valid plan after %d tries", out.Tries)}
	}
	preflight.PrintProblems(io.ErrOut, out.Problems) // warnings
	Print(io.ErrOut, out, o.Output, true)
	return nil
}

// Print writes a valid outcome's summary for people, and with next the
// command that runs it.
func Print(w io.Writer, out *Outcome, shown string, next bool) {
	fmt.Fprintf(w, "\nplan written to %s (try %d)\n", shown, out.Tries)
	for _, l := range out.Summary.Lines() {
		fmt.Fprintln(w, "  "+l)
	}
	fmt.Fprintf(w, "  planner        %s: %d tokens, $%.4f (plan session %s: muster report %s)\n",
		out.Executor, out.Usage.Tokens(), out.Usage.USD(), out.Session, out.Session)
	if next {
		fmt.Fprintf(w, "next: muster run %s\n", quote(shown))
	}
}

func quote(p string) string {
	if strings.ContainsAny(p, " \t'\"$`\\;&|<>()*?[]{}~!#") {
		return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
	}
	return p
}

// Result is muster plan --json.
type Result struct {
	Valid    bool             `json:"valid"`
	Path     string           `json:"path,omitempty"`
	Session  string           `json:"session"`
	Dir      string           `json:"dir"`
	Executor string           `json:"executor"`
	Tries    int              `json:"tries"`
	Summary  *planner.Summary `json:"summary,omitempty"`
	Problems []Problem        `json:"problems"`
	Usage    Usage            `json:"usage"`
}

// Problem is one problem of the last try, as validate --json prints it.
type Problem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	// Text is the problem as FILE:LINE: message.
	Text string `json:"text"`
}

// Usage is the planner's spend.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// JSON returns the outcome as muster plan --json prints it.
func JSON(o *Outcome) Result {
	r := Result{Valid: o.Valid(), Path: o.Path, Session: o.Session, Dir: o.Dir, Executor: o.Executor, Tries: o.Tries,
		Summary: o.Summary, Problems: Problems(o.Problems),
		Usage: Usage{InputTokens: o.Usage.InputTokens, OutputTokens: o.Usage.OutputTokens, CostUSD: o.Usage.USD()}}
	if r.Path != "" {
		r.Path = filepath.Clean(r.Path)
	}
	return r
}

// Problems converts problems for JSON.
func Problems(ps muster.Problems) []Problem {
	out := []Problem{}
	for _, p := range ps {
		sev := "error"
		if p.Warning {
			sev = "warning"
		}
		out = append(out, Problem{File: p.File, Line: p.Line, Severity: sev, Message: p.Message, Text: p.String()})
	}
	return out
}

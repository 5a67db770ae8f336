// Package run is the muster run command.
package run

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/plan"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/cli/runner"
	"github.com/muster-run/muster/internal/textsafe"
)

// NewCmd returns muster run.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	f := &preflight.Flags{}
	var goal, executor string
	var yes, dryRun bool
	cmd := &cobra.Command{
		Use:   "run PLAN | --goal GOAL",
		Short: "Run a plan across the crew",
		Long: `Run a plan (Markdown or YAML) across the crew of executors in parallel git
worktrees. The plan and config are validated first; nothing starts on an error.
Each task that succeeds leaves one commit on the run branch muster/<run-id>;
your work tree, index and branches are never touched (unless --merge).

With --goal instead of PLAN, a planner agent writes the plan first (as muster
plan does; --planner picks it), muster shows it and asks before running it. On
a terminal --yes skips the question; elsewhere --yes is required. --yes
approves the planned tasks, not their commands: a Gate:, Run: or Loop: the
planner wrote runs only with --approve commands, or after a question that
lists them (off a terminal, exit 2 names them).

Exit status: 0 all tasks succeeded, 1 a task failed or was skipped, 2 bad
input, 3 environment error, 130 interrupted (resume with muster resume).`,
		Example: `  muster run plan.md
  muster run plan.md --dry-run      # the schedule and expected cost, nothing spent
  muster run plan.md --crew sim=sim:4 --max-parallel 3
  muster run plan.yaml --json > events.jsonl
  muster run --goal "Add a /healthz endpoint" --yes`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			commands := approvesCommands(f)
			if commands && goal == "" {
				return cmdutil.FlagErrorf("--approve commands goes with --goal: it approves the commands a planner writes (a plan file's commands are yours)")
			}
			if goal == "" {
				if len(args) != 1 {
					return cmdutil.FlagErrorf("give a PLAN, or --goal GOAL")
				}
				if yes || executor != "" {
					return cmdutil.FlagErrorf("--yes and --planner go with --goal")
				}
				if dryRun {
					return DryRun(cmd.Context(), io, args[0], f)
				}
				_, err := runner.Start(cmd.Context(), io, args[0], f)
				return err
			}
			if len(args) > 0 {
				return cmdutil.FlagErrorf("give a PLAN or --goal, not both")
			}
			if dryRun {
				return cmdutil.FlagErrorf("--dry-run goes with a PLAN (muster plan GOAL writes one without running it)")
			}
			return runGoal(cmd, io, f, goal, executor, yes, commands)
		},
	}
	preflight.AddFlags(cmd, f)
	cmd.Flags().BoolVar(&f.Strict, "strict", false, "treat overlapping Owns between parallel tasks as an error")
	cmd.Flags().StringVar(&goal, "goal", "", "plan for this goal first (a planner agent writes the plan), then run it")
	cmd.Flags().StringVar(&executor, "planner", "", "with --goal: the executor that plans (default: the first with role planner, else the first coder)")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "with --goal: run the plan without asking")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "validate, show the schedule and the expected cost; run nothing, spend nothing")
	return cmd
}

// runGoal plans for goal, shows the plan and, once confirmed, runs it.
func runGoal(cmd *cobra.Command, io *cmdutil.IOStreams, f *preflight.Flags, goal, executor string, yes, commands bool) error {
	if strings.TrimSpace(goal) == "" {
		return cmdutil.FlagErrorf("--goal is empty: say what the plan should achieve")
	}
	ask := !yes
	if ask && (!terminal(io.In) || !cmdutil.IsTerminal(io.ErrOut)) {
		return cmdutil.FlagErrorf("--goal asks before it runs the plan, and this is not a terminal: pass --yes to run the plan without asking")
	}
	ctx := cmd.Context()
	repo, err := cmdutil.OpenRepo(ctx, f.Repo)
	if err != nil {
		return err
	}
	cfg, err := preflight.LoadConfig(repo, f)
	if err != nil {
		return err
	}
	out, err := plan.Make(ctx, repo, cfg, plan.Request{Goal: goal, Executor: executor, Log: io.ErrOut})
	if err != nil {
		return err
	}
	if !out.Valid() {
		fmt.Fprintf(io.ErrOut, "no valid plan after %d tries; nothing runs. The last plan's problems:\n", out.Tries)
		preflight.PrintProblems(io.ErrOut, out.Problems)
		return &cmdutil.Silent{Err: cmdutil.Invalid("no valid plan after %d tries", out.Tries)}
	}
	preflight.PrintProblems(io.ErrOut, out.Problems)
	fmt.Fprintln(io.ErrOut)
	for _, l := range strings.Split(strings.TrimRight(string(out.Text), "\n"), "\n") {
		fmt.Fprintln(io.ErrOut, "  │ "+textsafe.Sanitize(l))
	}
	plan.Print(io.ErrOut, out, out.Path, false)
	in := bufio.NewReader(io.In)
	if ok, err := approveCommands(io, in, out.Plan, out.Path, commands); !ok || err != nil {
		return err
	}
	if ask {
		fmt.Fprint(io.ErrOut, "run this plan now? [y/N] ")
		line, _ := in.ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintf(io.ErrOut, "not run; the plan is in %s\n", out.Path)
			return nil
		}
	}
	_, err = runner.Start(ctx, io, out.Path, f)
	fmt.Fprintf(io.ErrOut, "  planning   %d tokens, $%.4f before the run (plan session %s: muster report %s)\n",
		out.Usage.Tokens(), out.Usage.USD(), out.Session, out.Session)
	return err
}

func terminal(r any) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// approvesCommands reports whether --approve names "commands", and takes
// it out of the authorities the runner reads.
func approvesCommands(f *preflight.Flags) bool {
	found := false
	var kept []string
	for _, a := range f.Approve {
		var rest []string
		for _, one := range strings.Split(a, ",") {
			if strings.TrimSpace(one) == "commands" {
				found = true
				continue
			}
			rest = append(rest, one)
		}
		if len(rest) > 0 {
			kept = append(kept, strings.Join(rest, ","))
		}
	}
	f.Approve = kept
	return found
}

// plannedCommands lists the commands a plan would have muster run, one
// line each ("task a Gate: make test").
func plannedCommands(p *muster.Plan) []string {
	var out []string
	for _, t := range p.Tasks {
		if t.Done {
			continue
		}
		for _, g := range t.Gates {
			out = append(out, fmt.Sprintf("task %s Gate: %s", t.ID, g))
		}
		if t.EffectiveKind() == muster.KindCode && strings.TrimSpace(t.Run) != "" {
			out = append(out, fmt.Sprintf("task %s Run: %s", t.ID, t.Run))
		}
		if t.Loop != nil {
			out = append(out, fmt.Sprintf("task %s Loop: %s", t.ID, t.Loop.Check))
		}
	}
	return out
}

// approveCommands asks for the commands a planner wrote, unless
// --approve commands approved them: --yes approves the tasks, not what
// muster would execute for them. On a terminal it lists them and asks;
// elsewhere a plan with commands is refused (exit 2) naming each and the
// flag. It reports whether the run may go on.
func approveCommands(io *cmdutil.IOStreams, in *bufio.Reader, p *muster.Plan, path string, approved bool) (bool, error) {
	cmds := plannedCommands(p)
	if len(cmds) == 0 || approved {
		return true, nil
	}
	for i, c := range cmds {
		cmds[i] = "  " + textsafe.Sanitize(c)
	}
	list := strings.Join(cmds, "\n")
	if !terminal(io.In) || !cmdutil.IsTerminal(io.ErrOut) {
		return false, cmdutil.Invalid("the planner wrote commands muster would run:\n%s\n"+
			"--yes approves the planned tasks, not their commands: read them, then pass --approve commands to run them "+
			"(or edit %s and run it with muster run)", list, path)
	}
	fmt.Fprintf(io.ErrOut, "the planner wrote commands muster would run:\n%s\nrun these commands? [y/N] ", list)
	line, _ := in.ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		fmt.Fprintf(io.ErrOut, "not run; the plan is in %s\n", path)
		return false, nil
	}
	return true, nil
}

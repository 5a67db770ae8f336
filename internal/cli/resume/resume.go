// Package resume is the muster resume command.
package resume

import (
	"github.com/spf13/cobra"

	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/cli/runner"
)

// NewCmd returns muster resume.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	f := &preflight.Flags{}
	cmd := &cobra.Command{
		Use:   "resume [RUN | --run-id RUN]",
		Short: "Finish an interrupted or failed run (default: the latest)",
		Long: `Resume a run from its journal: attempts that were running when muster stopped
are marked interrupted and their worktrees reset; tasks whose commit is already
on the run branch count as done; every task that has not succeeded (failed,
skipped, cancelled, never started) runs again with the flags given now.
On a run where every task succeeded it changes nothing and exits 0, unless
the plan file adds tasks (below).

When the plan file (the one the run started with, or --plan FILE) differs
from the run's copy, resume says what changed task by task and adopts the
edits for the tasks that have not succeeded: their title, prompt, Owns,
Gate, Timeout, Budget, Executor and every other key, and new tasks, which
run in dependency order. The version is kept in the run directory
(plan-2.md, ...), recorded by a PlanAdopted event and sealed in the
receipt. Removing a task, or changing one that succeeded, is refused
(exit 2): start a new run for that. --keep-plan goes on with the copy.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := f.RunID
			if len(args) == 1 {
				if id != "" && id != args[0] {
					return cmdutil.FlagErrorf("give the run to resume once: RUN %s or --run-id %s, not both", args[0], id)
				}
				id = args[0]
			}
			_, err := runner.Resume(cmd.Context(), io, id, f)
			return err
		},
	}
	preflight.AddFlags(cmd, f)
	f.AdoptPlan = true
	cmd.Flags().StringVar(&f.PlanFile, "plan", "", "the plan file to compare with the run's copy (default: the file the run started with)")
	cmd.Flags().BoolVar(&f.KeepPlan, "keep-plan", false, "go on with the run's copy of the plan even when the plan file was edited")
	cmd.Flags().Lookup("run-id").Usage = "the run to resume (RUN's other spelling; default: the latest run)"
	return cmd
}

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
		Use:   "resume [RUN]",
		Short: "Finish an interrupted or failed run (default: the latest)",
		Long: `Resume a run from its journal: attempts that were running when muster stopped
are marked interrupted and their worktrees reset; tasks whose commit is already
on the run branch count as done; every task that has not succeeded (failed,
skipped, cancelled, never started) runs again with the flags given now.
On a run where every task succeeded it changes nothing and exits 0.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			_, err := runner.Resume(cmd.Context(), io, id, f)
			return err
		},
	}
	preflight.AddFlags(cmd, f)
	_ = cmd.Flags().MarkHidden("run-id")
	return cmd
}

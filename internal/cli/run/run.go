// Package run is the muster run command.
package run

import (
	"github.com/spf13/cobra"

	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/runner"
)

// NewCmd returns muster run.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	f := &runner.Flags{}
	cmd := &cobra.Command{
		Use:   "run PLAN",
		Short: "Run a plan across the crew",
		Long: `Run a plan (Markdown or YAML) across the crew of executors in parallel git
worktrees. The plan and config are validated first; nothing starts on an error.
Each task that succeeds leaves one commit on the run branch muster/<run-id>;
your work tree, index and branches are never touched (unless --merge).

Exit status: 0 all tasks succeeded, 1 a task failed or was skipped, 2 bad
input, 3 environment error, 130 interrupted (resume with muster resume).`,
		Example: `  muster run plan.md
  muster run plan.md --crew sim=sim:4 --max-parallel 3
  muster run plan.yaml --json > events.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := runner.Start(cmd.Context(), io, args[0], f)
			return err
		},
	}
	runner.AddFlags(cmd, f)
	cmd.Flags().BoolVar(&f.Strict, "strict", false, "treat overlapping Owns between parallel tasks as an error")
	return cmd
}

// Package validate is the muster validate command.
package validate

import (
	"encoding/json"
	"os"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
)

// NewCmd returns muster validate.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	f := &preflight.Flags{}
	cmd := &cobra.Command{
		Use:   "validate [PLAN]",
		Short: "Check a plan and the config; print nothing on success",
		Long: `Check a plan and the config together and report every problem at once, one a
line as FILE:LINE: message. Exit 2 when there is any error; warnings (such as
overlapping Owns between tasks that may run at once) alone exit 0, unless
--strict makes them errors. Without PLAN: plan.md, else muster-plan.md (the
sample muster init writes), in the current directory.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Outside a repository the plan is still checked, with the
			// config named by --config, if any.
			repo, err := cmdutil.OpenRepo(cmd.Context(), f.Repo)
			if err != nil && f.Repo != "" {
				return err
			}
			if repo == nil {
				repo = &cmdutil.Repo{Top: "."}
			}
			cfg, err := preflight.LoadConfig(repo, f)
			if err != nil {
				return err
			}
			// A plan may name executors only the fleet serves: with
			// --nats they are known as in a run (a config's [fleet] nats
			// alone does not make validate dial the fleet).
			if f.NATS != "" {
				leave, err := preflight.JoinFleet(cmd.Context(), io, cfg, f)
				if err != nil {
					return err
				}
				defer leave()
			}
			plan, err := planArg(args)
			if err != nil {
				return err
			}
			_, probs, err := preflight.Preflight(cmd.Context(), repo, plan, cfg, f.Strict)
			if err != nil {
				return err
			}
			preflight.PrintProblems(io.ErrOut, probs)
			if f.JSON {
				if err := writeProblems(io, probs); err != nil {
					return cmdutil.Env("write: %w", err)
				}
			}
			if errs := probs.Errors(); len(errs) > 0 {
				return &cmdutil.Silent{Err: errs}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.Repo, "repo", "", "repository (default: current directory)")
	fs.StringVar(&f.Config, "config", "", "config file (default: muster.toml at the repository root, if present)")
	fs.StringArrayVar(&f.Crew, "crew", nil, "add or override an executor: NAME=KIND[:CLONES]")
	fs.StringArrayVar(&f.Approve, "approve", nil, "approve an authority (e.g. shell)")
	fs.BoolVar(&f.Strict, "strict", false, "treat warnings as errors")
	fs.StringVar(&f.NATS, "nats", "", "a fleet's NATS server: the executors its workers serve are known")
	fs.StringVar(&f.Creds, "creds", "", "the fleet credentials file (default: [fleet] creds, or $MUSTER_NATS_CREDS)")
	fs.BoolVar(&f.JSON, "json", false, "also write each problem to stdout as a JSON line (nothing on success)")
	return cmd
}

// problem is one line of validate --json.
type problem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Severity string `json:"severity"` // error or warning
	Message  string `json:"message"`
}

func writeProblems(io *cmdutil.IOStreams, probs muster.Problems) error {
	enc := json.NewEncoder(io.Out)
	enc.SetEscapeHTML(false)
	for _, p := range probs {
		sev := "error"
		if p.Warning {
			sev = "warning"
		}
		if err := enc.Encode(problem{File: p.File, Line: p.Line, Severity: sev, Message: p.Message}); err != nil {
			return err
		}
	}
	return nil
}

// planArg is the plan to check: the argument, else plan.md, else
// muster-plan.md in the current directory.
func planArg(args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	for _, p := range []string{"plan.md", "muster-plan.md"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", cmdutil.Invalid("no plan given, and no plan.md nor muster-plan.md here: pass the plan file, as in muster validate plan.md")
}

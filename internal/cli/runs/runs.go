// Package runs is the muster runs command.
package runs

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/status"
	"github.com/muster-run/muster/journal"
)

// Run is one row of runs --json.
type Run struct {
	Run string `json:"run"`
	// Kind is "run", or "plan" for a plan session (muster plan).
	Kind    string  `json:"kind"`
	State   string  `json:"state"`
	Started string  `json:"started"`
	Plan    string  `json:"plan"`
	Branch  string  `json:"branch"`
	Tasks   int     `json:"tasks"`
	Done    int     `json:"succeeded"`
	CostUSD float64 `json:"cost_usd"`
	Dir     string  `json:"dir"`
	// started is Started for the text form, in local time.
	started time.Time
}

// NewCmd returns muster runs.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	var repoDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "The runs in this repository, latest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			repo, err := cmdutil.OpenRepo(cmd.Context(), repoDir)
			if err != nil {
				return err
			}
			infos, err := repo.Runs()
			if err != nil {
				return err
			}
			rows := []Run{}
			for _, info := range infos {
				events, err := repo.ReadRun(info.ID)
				if err != nil {
					continue
				}
				st, err := engine.Replay(events)
				if err != nil {
					continue
				}
				s := status.Build(st, info.Dir, journal.Locked(repo.JournalPath(info.ID)))
				done := 0
				for _, t := range s.Tasks {
					if t.State == "succeeded" {
						done++
					}
				}
				kind := "run"
				if info.Kind == muster.RunKindPlan {
					kind = muster.RunKindPlan
				}
				rows = append(rows, Run{Run: s.Run, Kind: kind, State: s.State, Started: info.Started.UTC().Format(time.RFC3339),
					Plan: s.Plan, Branch: s.Branch, Tasks: len(s.Tasks), Done: done, CostUSD: s.Usage.CostUSD, Dir: info.Dir, started: info.Started})
			}
			if asJSON {
				return cmdutil.WriteJSON(io.Out, rows)
			}
			if len(rows) == 0 {
				fmt.Fprintln(io.ErrOut, "no runs yet: start one with muster run PLAN")
				return nil
			}
			fmt.Fprintf(io.Out, "%-22s %-5s %-12s %-20s %-9s %-10s %s\n", "RUN", "KIND", "STATE", "STARTED", "TASKS", "COST", "PLAN")
			for _, r := range rows {
				started := r.started.Local().Format("2006-01-02 15:04:05")
				fmt.Fprintf(io.Out, "%-22s %-5s %-12s %-20s %-9s %-10s %s\n", r.Run, r.Kind, r.State, started, fmt.Sprintf("%d/%d", r.Done, r.Tasks), muster.FormatUSD(muster.MicrosOfUSD(r.CostUSD)), r.Plan)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repoDir, "repo", "", "repository (default: current directory)")
	// --config is a common flag (ARCHITECTURE.md §2.1); a run's config is in its
	// journal, so it changes nothing here.
	cmd.Flags().String("config", "", "config file (accepted for symmetry; a run's config is in its journal)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

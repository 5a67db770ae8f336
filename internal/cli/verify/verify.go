// Package verify is the muster verify command: it checks a run's sealed
// receipt against its journal, its plan copy and its run branch.
package verify

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/journal"
	"github.com/muster-run/muster/planfile"
	"github.com/muster-run/muster/receipt"
)

// NewCmd returns muster verify.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	var repoDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [RUN]",
		Short: "Check a run's sealed receipt against its journal and git (default: the latest run)",
		Long: `Check the receipt a run sealed (receipt.json in its run directory) against
the journal (hash chain over its lines: an edited, cut or extended journal is
named line by line), the run's copy of the plan (canonical hash) and the run
branch (its tip, each task's commit, and that every commit on it is one the
journal records as muster's: a commit no journal event accounts for is named,
whatever its trailer claims).
Exit 0 when everything matches; 1, listing each difference, when not.
--json prints one object: run, ok (true or false), summary (what holds, or
"") and problems (each difference, or []); the exit status is the same.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return Run(cmd.Context(), io, repoDir, id, asJSON)
		},
	}
	cmd.Flags().StringVar(&repoDir, "repo", "", "repository to work in (default: current directory)")
	cmd.Flags().String("config", "", "config file (accepted for symmetry; a run's config is in its journal)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	return cmd
}

// Result is verify --json's object.
type Result struct {
	Run      string   `json:"run"`
	OK       bool     `json:"ok"`
	Summary  string   `json:"summary"`
	Problems []string `json:"problems"`
}

// Run verifies run id (or the latest run) of the repository at repoDir,
// as one JSON object when asJSON.
func Run(ctx context.Context, io *cmdutil.IOStreams, repoDir, id string, asJSON bool) error {
	repo, err := cmdutil.OpenRepo(ctx, repoDir)
	if err != nil {
		return err
	}
	if id, err = repo.ResolveRun(id); err != nil {
		return err
	}
	if repo.IsPlanSession(id) {
		return cmdutil.Invalid("%s is a plan session (muster plan), not a run: it has no receipt to verify", id)
	}
	problems, summary, err := Check(ctx, repo, id)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(io, id, problems, summary)
	}
	if len(problems) > 0 {
		return failed(io, id, problems)
	}
	fmt.Fprintf(io.Out, "run %s: the receipt holds: %s\n", id, summary)
	return nil
}

// Check verifies the receipt of run id: it returns every difference, or
// none and a one-line summary of what holds. A run a live process drives
// is an environment error.
func Check(ctx context.Context, repo *cmdutil.Repo, id string) (problems []string, summary string, err error) {
	dir := repo.RunDir(id)
	if journal.Locked(repo.JournalPath(id)) {
		return nil, "", cmdutil.Env("run %s is being driven by a muster process: verify it once it ends", id)
	}
	r, err := receipt.Read(dir)
	if errors.Is(err, os.ErrNotExist) {
		return []string{missing(repo, id)}, "", nil
	}
	if err != nil {
		return []string{"receipt: " + err.Error()}, "", nil
	}
	if v := r.Canon(); v > planfile.CanonicalVersion {
		return []string{fmt.Sprintf("plan: the receipt hashed the plan with version %d of its canonical form; this muster knows versions 1 to %d (verify with a newer muster)", v, planfile.CanonicalVersion)}, "", nil
	}
	data, err := os.ReadFile(repo.JournalPath(id))
	if err != nil {
		return nil, "", cmdutil.Env("read journal: %w", err)
	}
	b, err := branch(ctx, repo, id, r)
	if err != nil {
		return nil, "", err
	}
	problems = receipt.Verify(r, data, cmdutil.PlanHash(dir, r.Canon()), b)
	problems = append(problems, receipt.VerifyPlans(r, func(file string) string { return cmdutil.PlanFileHash(dir, file, r.Canon()) })...)
	if len(problems) > 0 {
		return problems, "", nil
	}
	plans := ""
	if n := len(r.Plans); n > 0 {
		plans = fmt.Sprintf(" and %d adopted version(s)", n)
	}
	return nil, fmt.Sprintf("%d journal lines (chain %s), plan %s%s, branch %s at %s, %d tasks",
		r.Journal.Lines, textsafe.Short(r.Journal.Hash), textsafe.Short(r.PlanHash), plans, r.Branch, textsafe.Short(r.Final), len(r.Tasks)), nil
}

// missing says why run id has no receipt: it has not ended, or it
// finished and muster was killed before sealing, or the receipt was
// deleted since.
func missing(repo *cmdutil.Repo, id string) string {
	dir := repo.RunDir(id)
	es, _ := journal.ReadFile(repo.JournalPath(id))
	if n := len(es); n > 0 && es[n-1].Type == muster.EvRunFinished {
		return "receipt: none sealed in " + dir + ", though the journal says the run finished: muster was killed before it sealed one, or it was deleted since; without it the journal cannot be checked (muster resume " + id + " seals the journal as it stands now)"
	}
	return "receipt: none sealed in " + dir + " (the run has not ended; muster resume " + id + " ends and seals it)"
}

// branch reads the run branch: its tip and every commit on it since the
// base. A branch that is gone has no tip.
func branch(ctx context.Context, repo *cmdutil.Repo, id string, r *receipt.Receipt) (receipt.Branch, error) {
	tip, commits, err := git.ReadBranch(ctx, repo.Top, id, r.Base)
	if err != nil {
		return receipt.Branch{}, cmdutil.Env("read the run branch: %w", err)
	}
	b := receipt.Branch{Tip: tip}
	for _, c := range commits {
		b.Commits = append(b.Commits, receipt.Commit{ID: c.ID, Task: muster.TaskID(c.Task)})
	}
	return b, nil
}

// writeJSON prints the result as a Result: exit 1 when it does not hold.
func writeJSON(io *cmdutil.IOStreams, id string, problems []string, summary string) error {
	res := Result{Run: id, OK: len(problems) == 0, Summary: summary, Problems: []string{}}
	for _, p := range problems {
		res.Problems = append(res.Problems, textsafe.Sanitize(p))
	}
	if err := cmdutil.WriteJSON(io.Out, res); err != nil {
		return err
	}
	if !res.OK {
		return mismatch()
	}
	return nil
}

func mismatch() error {
	return &cmdutil.Silent{Err: &muster.Error{Code: muster.CodeFailed, Message: "receipt mismatch"}}
}

func failed(io *cmdutil.IOStreams, id string, problems []string) error {
	fmt.Fprintf(io.Out, "run %s: the receipt does not match:\n", id)
	for _, p := range problems {
		fmt.Fprintf(io.Out, "  %s\n", textsafe.Sanitize(p))
	}
	return mismatch()
}

package preflight

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/config"
	"github.com/muster-run/muster/cost"
	"github.com/muster-run/muster/internal/cli/cmdutil"
)

// Flags are the flags of run and resume (ARCHITECTURE.md §2.1).
type Flags struct {
	Repo        string
	Config      string
	JSON        bool
	MaxParallel int
	OnFailure   string
	Crew        []string
	RunID       string
	Merge       bool
	BudgetUSD   float64
	Approve     []string
	Strict      bool
	Verbose     bool
	Plain       bool
	// NATS is the fleet's server (--nats); the crew gains its executors.
	NATS string
	// Creds is the fleet credentials file (--creds).
	Creds string
	// AdoptPlan (set by muster resume alone) compares the plan file with
	// the run's newest copy and adopts its edits (internal/cli/runner,
	// adopt.go); PlanFile (--plan) names the file (default: the one the
	// run started with) and KeepPlan (--keep-plan) keeps the copy.
	AdoptPlan bool
	PlanFile  string
	KeepPlan  bool
}

// AddFlags registers the flags shared by run and resume.
func AddFlags(cmd *cobra.Command, f *Flags) {
	fs := cmd.Flags()
	fs.StringVar(&f.Repo, "repo", "", "repository to work in (default: current directory)")
	fs.StringVar(&f.Config, "config", "", "config file (default: muster.toml at the repository root, if present)")
	fs.BoolVar(&f.JSON, "json", false, "write the journal's events to stdout as JSON lines; progress goes to stderr")
	fs.IntVar(&f.MaxParallel, "max-parallel", 0, "cap on coders working at once (default: from config, else every clone)")
	fs.StringVar(&f.OnFailure, "on-failure", "", "after a task fails: continue (default) or stop")
	fs.StringArrayVar(&f.Crew, "crew", nil, "add or override an executor: NAME=KIND[:CLONES] (repeatable)")
	fs.StringVar(&f.RunID, "run-id", "", "the run's ID (default: date and random digits)")
	fs.BoolVar(&f.Merge, "merge", false, "fast-forward your branch to the run branch when every task succeeded")
	fs.Float64Var(&f.BudgetUSD, "budget-usd", 0, "the run's total spending limit in dollars")
	fs.StringArrayVar(&f.Approve, "approve", nil, "approve an authority the plan requests (e.g. shell; repeatable)")
	fs.BoolVar(&f.Verbose, "verbose", false, "also print tool uses and passing gates")
	fs.BoolVar(&f.Plain, "plain", false, "plain progress lines even on a terminal")
	fs.StringVar(&f.NATS, "nats", "", "a fleet's NATS server, nats://HOST:PORT: the crew gains the executors its workers serve (default: [fleet] nats)")
	fs.StringVar(&f.Creds, "creds", "", "the orchestrator's fleet credentials file (default: [fleet] creds, or $MUSTER_NATS_CREDS)")
}

// LoadConfig reads the config (flag, or muster.toml at the top, or the
// defaults) and applies the command-line overrides.
func LoadConfig(repo *cmdutil.Repo, f *Flags) (*muster.Config, error) {
	cfg, err := config.Resolve(repo.Top, f.Config)
	if err != nil {
		return nil, err
	}
	return cfg, ApplyFlags(cfg, f)
}

// ApplyFlags applies command-line overrides to cfg.
func ApplyFlags(cfg *muster.Config, f *Flags) error {
	if err := config.MergeCrew(cfg, f.Crew); err != nil {
		return &cmdutil.FlagError{Err: err}
	}
	if f.MaxParallel < 0 {
		return cmdutil.FlagErrorf("--max-parallel must be 0 or more, not %d", f.MaxParallel)
	}
	if f.MaxParallel > 0 {
		cfg.Run.MaxParallel = f.MaxParallel
	}
	switch p := muster.OnFailurePolicy(f.OnFailure); {
	case p == "":
	case slices.Contains(muster.OnFailurePolicies, p):
		cfg.Run.OnFailure = p
	default:
		return cmdutil.FlagErrorf("--on-failure must be stop or continue, not %q", f.OnFailure)
	}
	if err := CheckBudget(f.BudgetUSD); err != nil {
		return err
	}
	if f.BudgetUSD > 0 {
		cfg.Run.BudgetUSDMicros = muster.MicrosFromUSD(f.BudgetUSD)
	}
	for _, a := range f.Approve {
		for _, one := range strings.Split(a, ",") {
			one = strings.TrimSpace(one)
			switch muster.Authority(one) {
			case muster.AuthorityRead, muster.AuthorityWrite, muster.AuthorityShell:
				cfg.Run.Approve = append(cfg.Run.Approve, muster.Authority(one))
			default:
				return cmdutil.FlagErrorf("--approve: unknown authority %q (read, write or shell)", one)
			}
		}
	}
	return nil
}

// Prices returns the price table for estimated costs: the embedded one,
// or the file named by [run] prices_file.
func Prices(cfg *muster.Config) (*cost.Table, error) {
	if cfg.Run.PricesFile == "" {
		return cost.Default(), nil
	}
	t, err := cost.Load(cfg.Run.PricesFile)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("prices_file %s: %v", cfg.Run.PricesFile, err)}
	}
	return t, nil
}

// Unapproved lists what the plan requests that is not approved: shell,
// and any authority under require_approval, unless approved in config or
// with --approve.
func Unapproved(p *muster.Plan, cfg *muster.Config) muster.Problems {
	need := map[muster.Authority]bool{muster.AuthorityShell: true}
	for _, a := range cfg.Run.RequireApproval {
		need[a] = true
	}
	for _, a := range cfg.Run.Approve {
		delete(need, a)
	}
	var probs muster.Problems
	for _, t := range p.Tasks {
		if t.Done {
			continue
		}
		a := t.EffectiveAuthority()
		if need[a] {
			probs = append(probs, muster.Problem{File: p.Source, Line: t.LineOf("authority"),
				Message: fmt.Sprintf("task %s requests authority %q, which is not approved: approve it with --approve %s or [run] approve = [%q] in muster.toml", t.ID, a, a, a)})
		}
	}
	return probs
}

// PrintProblems writes problems, one a line, to w.
func PrintProblems(w io.Writer, probs muster.Problems) {
	for _, p := range probs {
		fmt.Fprintln(w, p.String())
	}
}

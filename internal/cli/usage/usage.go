// Package usage implements `muster usage claude|codex [daily|monthly|session]`:
// token and cost reports over the agents' own logs.
package usage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/cost"
	"github.com/muster-run/muster/usagelog"
)

// Options are the parsed flags and arguments of `muster usage`.
type Options struct {
	Source    string // claude or codex
	Report    string // daily, monthly or session
	Dir       string
	Since     string // YYYY-MM-DD after parsing
	Until     string
	TZ        *time.Location
	Breakdown bool
	JSON      bool
	Debug     bool
	// Prices is the price file to add to the embedded table ("" none).
	Prices string
	// Workers is the number of parallel readers (0: all cores).
	Workers int
	// Runs adds the sessions muster ran in the repository at Repo
	// (its agents' homes in the run directories).
	Runs bool
	Repo string

	Out, Err io.Writer
}

// NewCmd returns the `usage` command.
func NewCmd() *cobra.Command {
	return newCmd(run)
}

func newCmd(runF func(context.Context, *Options) error) *cobra.Command {
	var since, until, tz string
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "usage claude|codex [daily|monthly|session]",
		Short: "Token and cost report over Claude Code or Codex logs",
		Long: `Report tokens and cost from the agents' own logs.

claude reads every projects/**/*.jsonl under $CLAUDE_CONFIG_DIR (else
~/.claude), sub-agent files included, counting each API message once.
codex reads sessions/** under $CODEX_HOME (else ~/.codex). Both also read
the sessions muster ran in the current repository (each attempt's agent
has a home of its own under .git/muster/runs): --runs=false leaves them
out; with --dir they count only with --runs.

Costs logged by the agent are used as they are; others are estimated from
the embedded price table (its date is printed) and marked with *.`,
		Args:          cobra.RangeArgs(1, 2),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Source = args[0]
			if opts.Source != "claude" && opts.Source != "codex" {
				return muster.Errorf(muster.CodeInvalid, "usage: unknown source %q: want claude or codex", opts.Source)
			}
			opts.Report = usagelog.Daily
			if len(args) == 2 {
				opts.Report = args[1]
			}
			switch opts.Report {
			case usagelog.Daily, usagelog.Monthly, usagelog.Session:
			default:
				return muster.Errorf(muster.CodeInvalid, "usage: unknown report %q: want daily, monthly or session", opts.Report)
			}
			var err error
			if since != "" {
				if opts.Since, err = usagelog.ParseDate(since); err != nil {
					return muster.Errorf(muster.CodeInvalid, "--since: %w", err)
				}
			}
			if until != "" {
				if opts.Until, err = usagelog.ParseDate(until); err != nil {
					return muster.Errorf(muster.CodeInvalid, "--until: %w", err)
				}
			}
			if opts.Since != "" && opts.Until != "" && opts.Since > opts.Until {
				return muster.Errorf(muster.CodeInvalid, "--since %s is after --until %s", opts.Since, opts.Until)
			}
			opts.TZ = time.Local
			if tz != "" {
				if opts.TZ, err = time.LoadLocation(tz); err != nil {
					return muster.Errorf(muster.CodeInvalid, "--tz %q: not an IANA time zone name", tz)
				}
			}
			// By default the sessions muster ran here count too, unless
			// --dir names the one folder to read.
			if !cmd.Flags().Changed("runs") {
				opts.Runs = opts.Dir == ""
			}
			opts.Out, opts.Err = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runF(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Dir, "dir", "", "folder of logs to scan (default $CLAUDE_CONFIG_DIR or ~/.claude; $CODEX_HOME or ~/.codex)")
	f.StringVar(&since, "since", "", "first day to include (YYYY-MM-DD or YYYYMMDD)")
	f.StringVar(&until, "until", "", "last day to include (YYYY-MM-DD or YYYYMMDD)")
	f.StringVar(&tz, "tz", "", "IANA time zone for days and months (default local)")
	f.BoolVar(&opts.Breakdown, "breakdown", false, "show figures per model")
	f.BoolVar(&opts.JSON, "json", false, "print JSON")
	f.BoolVar(&opts.Debug, "debug", false, "print to stderr how many lines were read and skipped, and why")
	f.StringVar(&opts.Prices, "prices", "", "JSON price file adding to or overriding the embedded prices")
	f.IntVar(&opts.Workers, "workers", 0, "parallel readers (default: number of cores)")
	f.BoolVar(&opts.Runs, "runs", true, "also read the sessions muster ran in this repository (its agents' homes in .git/muster/runs; default: on unless --dir)")
	f.StringVar(&opts.Repo, "repo", "", "the repository whose muster runs to read (default: the current directory's)")
	// --config is a common flag (ARCHITECTURE.md §2.1).
	f.String("config", "", "config file (accepted for symmetry; usage reads the agents' logs, not a config)")
	return cmd
}

func run(ctx context.Context, opts *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	prices := cost.Default()
	if opts.Prices != "" {
		var err error
		if prices, err = cost.Load(opts.Prices); err != nil {
			return err
		}
	}
	so := usagelog.Options{Dir: opts.Dir, Prices: prices, Workers: opts.Workers}
	if opts.Runs {
		so.Extra = runHomes(ctx, opts.Repo, opts.Source)
	}
	var res *usagelog.Result
	var err error
	if opts.Source == "claude" {
		res, err = usagelog.ScanClaude(ctx, so)
	} else {
		res, err = usagelog.ScanCodex(ctx, so)
	}
	if err != nil {
		if opts.Dir != "" || !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// The agent has never run here (its default log folder is not
		// there): nothing to report, which is no error. With --json,
		// stdout is still the (empty) report, the note people's.
		if !opts.JSON {
			fmt.Fprintf(opts.Out, "no usage found: %v\n", err)
			return nil
		}
		fmt.Fprintf(opts.Err, "no usage found: %v\n", err)
		res = &usagelog.Result{Source: opts.Source}
	}
	rep, err := usagelog.Aggregate(res, opts.Report, usagelog.Filter{Since: opts.Since, Until: opts.Until, TZ: opts.TZ}, opts.Breakdown)
	if err != nil {
		return err
	}
	if opts.Debug {
		writeDebug(opts.Err, &res.Stats)
	}
	if opts.JSON {
		return rep.WriteJSON(opts.Out)
	}
	if len(rep.Rows) == 0 {
		fmt.Fprintln(opts.Out, "no usage found")
		return nil
	}
	return rep.WriteText(opts.Out)
}

func writeDebug(w io.Writer, s *usagelog.Stats) {
	fmt.Fprintf(w, "debug: %d files (%d unreadable), %d bytes, %d lines, %d usage records, %d kept after de-duplication\n",
		s.Files, s.Unreadable, s.Bytes, s.Lines, s.Records, s.Entries)
	reasons := make([]string, 0, len(s.Skipped))
	for r := range s.Skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "debug: skipped %d lines: %s\n", s.Skipped[r], r)
	}
}

// Package report is the muster report command: usage and cost of runs,
// as text, JSON or CSV, and a run's self-contained HTML report.
package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/htmlreport"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/cli/verify"
	"github.com/muster-run/muster/journal"
	rep "github.com/muster-run/muster/report"
)

// Options are the command's flags.
type Options struct {
	Repo   string
	All    bool
	JSON   bool
	CSV    bool
	HTML   string
	Since  string
	Until  string
	TZ     string
	Config string
}

// NewCmd returns muster report.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "report [RUN | --all]",
		Short: "Usage and cost of a run (default: the latest) or of every run",
		Long: `Report tokens and cost of a run, or of every run of the repository with --all:
totals; by day and by hour; by model; by role; by task; by executor clone
(claude#2) with each clone's share of all tokens; cost per succeeded task; and
for a running or finished run, a projection of cost per day at its rate.
Agent-reported costs are used as they are; others are estimated from a dated
price table, and the report says which.

--html FILE writes one self-contained HTML page of a run: its task graph, a
Gantt chart of tasks across executor clones, cost charts and a task table.`,
		Example: `  muster report
  muster report 20261129-abc123 --json
  muster report --all --since 2026-11-01 --csv
  muster report --html run.html`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return run(io, o, id)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Repo, "repo", "", "repository (default: current directory)")
	fs.BoolVar(&o.All, "all", false, "report every run of the repository")
	fs.BoolVar(&o.JSON, "json", false, "JSON output (stable field names, with a schema version)")
	fs.BoolVar(&o.CSV, "csv", false, "CSV output")
	fs.StringVar(&o.HTML, "html", "", "write the run's HTML report to FILE")
	fs.StringVar(&o.Since, "since", "", "count usage from this day (YYYY-MM-DD)")
	fs.StringVar(&o.Until, "until", "", "count usage up to and including this day (YYYY-MM-DD)")
	fs.StringVar(&o.TZ, "tz", "", "time zone of days and hours (IANA name; default: local)")
	fs.StringVar(&o.Config, "config", "", "config file, for prices_file (default: muster.toml at the root)")
	return cmd
}

func run(io *cmdutil.IOStreams, o *Options, id string) error {
	if o.All && id != "" {
		return cmdutil.FlagErrorf("give a RUN or --all, not both")
	}
	if o.JSON && o.CSV {
		return cmdutil.FlagErrorf("--json and --csv exclude each other")
	}
	if o.HTML != "" && o.All {
		return cmdutil.FlagErrorf("--html reports one run: drop --all")
	}
	tz, since, until, err := o.window()
	if err != nil {
		return err
	}
	repo, err := cmdutil.OpenRepo(context.Background(), o.Repo)
	if err != nil {
		return err
	}
	ids, runs, err := readRuns(repo, o.All, id)
	if err != nil {
		return err
	}
	if o.HTML != "" {
		return writeHTML(context.Background(), io, o.HTML, runs[0], repo, ids[0])
	}
	cfg, err := preflight.LoadConfig(repo, &preflight.Flags{Config: o.Config})
	if err != nil {
		return err
	}
	prices, err := preflight.Prices(cfg)
	if err != nil {
		return err
	}
	r := rep.Build(runs, rep.Options{TZ: tz, Since: since, Until: until, Prices: prices, Now: time.Now()})
	format := rep.FormatText
	switch {
	case o.JSON:
		format = rep.FormatJSON
	case o.CSV:
		format = rep.FormatCSV
	}
	return rep.Write(io.Out, r, format)
}

// window reads --tz, --since and --until: the report's zone and the
// days it covers, until exclusive (zero: no bound).
func (o *Options) window() (tz *time.Location, since, until time.Time, err error) {
	tz = time.Local
	if o.TZ != "" {
		loc, err := time.LoadLocation(o.TZ)
		if err != nil {
			return nil, since, until, cmdutil.FlagErrorf("--tz %q: %w", o.TZ, err)
		}
		tz = loc
	}
	if since, err = day(o.Since, tz, "--since"); err != nil {
		return nil, since, until, err
	}
	if until, err = day(o.Until, tz, "--until"); err != nil {
		return nil, since, until, err
	}
	if !since.IsZero() && !until.IsZero() && since.After(until) {
		return nil, since, until, cmdutil.FlagErrorf("--since %s is after --until %s", o.Since, o.Until)
	}
	if !until.IsZero() {
		until = until.AddDate(0, 0, 1)
	}
	return tz, since, until, nil
}

// readRuns reads the journal of the run id names, or of every run with
// all; a run no process drives is ended as muster status ends it.
func readRuns(repo *cmdutil.Repo, all bool, id string) ([]string, [][]muster.Event, error) {
	var ids []string
	if all {
		infos, err := repo.Runs()
		if err != nil {
			return nil, nil, err
		}
		for _, info := range infos {
			ids = append(ids, info.ID)
		}
		if len(ids) == 0 {
			return nil, nil, cmdutil.Invalid("no runs in %s yet", repo.Top)
		}
	} else {
		one, err := repo.ResolveRun(id)
		if err != nil {
			return nil, nil, err
		}
		ids = []string{one}
	}
	var runs [][]muster.Event
	for _, r := range ids {
		evs, err := repo.ReadRun(r)
		if err != nil {
			return nil, nil, err
		}
		if !journal.Locked(repo.JournalPath(r)) {
			evs = endDeadRun(evs)
		}
		runs = append(runs, evs)
	}
	return ids, runs, nil
}

// endDeadRun ends, in memory, a run that no process drives but whose
// journal does not say it ended (muster was killed): as muster status
// says, the run is interrupted as of its last event and the attempts it
// had under way are cancelled ("interrupted"), not running for ever.
func endDeadRun(events []muster.Event) []muster.Event {
	if len(events) == 0 {
		return events
	}
	ended := true
	for i := len(events) - 1; i >= 0; i-- {
		t := events[i].Type
		if t == muster.EvRunFinished || t == muster.EvRunInterrupted {
			break
		}
		if t == muster.EvRunStarted || t == muster.EvRunResumed {
			ended = false
			break
		}
	}
	if ended {
		return events
	}
	last := events[len(events)-1]
	out := events[:len(events):len(events)]
	add := func(e muster.Event) {
		e.Seq, e.Time = last.Seq+int64(len(out)-len(events))+1, last.Time
		out = append(out, e)
	}
	if st, err := engine.Replay(events); err == nil {
		for _, o := range engine.Orphans(st) {
			if t := st.Tasks[o.Lease.Task]; o.Running && t != nil {
				add(muster.Event{Type: muster.EvTaskCancelled, Task: o.Lease.Task, Attempt: t.Attempts, Reason: "interrupted"})
			}
			if o.Lease.Executor != "" {
				add(muster.Event{Type: muster.EvExecutorRelease, Task: o.Lease.Task, Executor: o.Lease.Executor, Clone: o.Lease.Clone, Role: o.Lease.Role})
			}
		}
	}
	add(muster.Event{Type: muster.EvRunInterrupted, Run: last.Run})
	return out
}

// WriteHTML writes a run's HTML report to path.
func WriteHTML(path string, events []muster.Event, verification string) error {
	f, err := os.Create(path)
	if err != nil {
		return cmdutil.Env("write %s: %w", path, err)
	}
	if err := htmlreport.Write(f, events, htmlreport.Options{Verification: verification, Now: time.Now()}); err != nil {
		f.Close()
		return cmdutil.Env("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return cmdutil.Env("write %s: %w", path, err)
	}
	return nil
}

func writeHTML(ctx context.Context, io *cmdutil.IOStreams, path string, events []muster.Event, repo *cmdutil.Repo, id string) error {
	if err := WriteHTML(path, events, Verification(ctx, repo, id)); err != nil {
		return err
	}
	abs, _ := filepath.Abs(path)
	fmt.Fprintf(io.ErrOut, "report: %s\n", abs)
	return nil
}

// Verification is the receipt card of the HTML report: what muster
// verify says of run id now ("" while a process drives it: not checked).
func Verification(ctx context.Context, repo *cmdutil.Repo, id string) string {
	problems, _, err := verify.Check(ctx, repo, id)
	switch {
	case err != nil:
		return ""
	case len(problems) == 1 && strings.HasPrefix(problems[0], "receipt: none sealed"):
		return "not sealed yet: the run has not ended"
	case len(problems) > 0:
		return "does not match: muster verify " + id + " says what differs"
	}
	return "verified: the receipt holds"
}

func day(s string, tz *time.Location, flag string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{"2006-01-02", "20060102"} {
		if t, err := time.ParseInLocation(layout, strings.TrimSpace(s), tz); err == nil {
			return t, nil
		}
	}
	return time.Time{}, cmdutil.FlagErrorf("%s %q: want a day as YYYY-MM-DD", flag, s)
}

// Package watch implements `muster watch [RUN]`: it follows a run's
// journal from another terminal and shows the live view, or plain
// progress lines when the output is not a terminal, in CI, or with
// --plain.
package watch

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/tui"
)

// PollInterval is how often the journal is checked for new lines.
const PollInterval = 200 * time.Millisecond

// Options are the parsed command line of muster watch.
type Options struct {
	Run     string // run ID, "" for the latest
	Repo    string // repository, "" for the current directory
	Plain   bool   // plain progress lines even on a terminal
	Journal string // path of the run's journal
	In      io.Reader
	Out     io.Writer
	// TUI forces the live view (true) or plain lines (false); nil decides
	// by the terminal, CI and --plain.
	TUI *bool
}

// NewCmd returns the watch command. resolve maps a repository (--repo,
// "" for the current directory) and a run ID ("" for the latest run) to
// the path of the run's journal.
func NewCmd(resolve func(repo, run string) (journalPath string, err error)) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "watch [RUN]",
		Short: "Watch a run live from another terminal",
		Long: `Follow a run's journal and show each executor clone's lane, the tasks and
the latest events. q leaves the view; the run goes on either way: watch never
stops a run. With --plain, in CI, or when the output is not a terminal, it
prints one progress line per event instead.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			path, err := resolve(opts.Repo, opts.Run)
			if err != nil {
				return err
			}
			opts.Journal = path
			opts.In, opts.Out = cmd.InOrStdin(), cmd.OutOrStdout()
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return Run(ctx, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Plain, "plain", false, "print plain progress lines instead of the live view")
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "repository (default: current directory)")
	// --config is a common flag (ARCHITECTURE.md §2.1).
	cmd.Flags().String("config", "", "config file (accepted for symmetry; a run's config is in its journal)")
	return cmd
}

// Run follows opts.Journal until the run ends (or the user leaves the
// live view) and shows it.
func Run(ctx context.Context, opts *Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan muster.Event, 256)
	errc := make(chan error, 1)
	// The follower goroutine ends when the run ends or ctx is cancelled;
	// Run waits for it.
	go func() {
		errc <- Follow(ctx, opts.Journal, PollInterval, events)
		close(events)
	}()
	live := !opts.Plain && tui.Interactive(opts.In, opts.Out)
	if opts.TUI != nil {
		live = *opts.TUI
	}
	if live {
		err := tui.Run(ctx, events, opts.In, opts.Out, tui.Options{})
		cancel()
		for range events { // let the follower finish
		}
		ferr := <-errc
		switch {
		case errors.Is(err, tui.ErrDetached), errors.Is(err, tui.ErrInterrupt):
			return nil // watch never stops the run
		case err != nil:
			return err
		case ferr != nil && !errors.Is(ferr, context.Canceled):
			return ferr
		}
		return nil
	}
	p := tui.NewPrinter(opts.Out)
	var werr error
	for e := range events {
		if werr == nil {
			werr = p.Print(e)
			if werr != nil {
				cancel()
			}
		}
	}
	if ferr := <-errc; ferr != nil && werr == nil {
		return ferr
	}
	return werr
}

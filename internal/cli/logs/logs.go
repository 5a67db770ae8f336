// Package logs is the muster logs command: what an attempt's agent, gates
// and reviewers did, from the run's journal and attempt logs (runlog).
package logs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/watch"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/runlog"
)

// Options are the parsed command line of muster logs.
type Options struct {
	Repo    string
	Run     string
	Task    string
	Attempt int
	Round   int
	// HasRound says --round was given.
	HasRound bool
	Follow   bool
	JSON     bool
	// Full prints each gate's whole output (default: its last lines).
	Full bool
}

// NewCmd returns muster logs.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "logs [TASK]",
		Short: "What an attempt's agent, gates and reviewers did",
		Long: `Show what happened in a task's attempt, in order: the head of the prompt, what
the agent printed (messages, tool calls, the end of its output), the diff
stat, each gate's command, exit status and output tail, review findings, fix
rounds and the reasons given to the agent, and the final reason.

Default: the latest run, the latest attempt. Without TASK, every task that
ran, failures first. -f follows a live run (every attempt, as it happens)
until it ends. --json prints one JSON object a line.`,
		Example: `  muster logs              # why the latest run's tasks failed, then the rest
  muster logs api          # task api's latest attempt
  muster logs api --attempt 1 --round 2
  muster logs -f           # follow the run going on now`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Task = args[0]
			}
			opts.HasRound = cmd.Flags().Changed("round")
			if opts.Attempt < 0 || cmd.Flags().Changed("attempt") && opts.Attempt < 1 {
				return cmdutil.FlagErrorf("--attempt must be 1 or more")
			}
			if opts.HasRound && opts.Round < 0 {
				return cmdutil.FlagErrorf("--round must be 0 or more")
			}
			if opts.Task == "" && (opts.Attempt > 0 || opts.HasRound) {
				return cmdutil.FlagErrorf("--attempt and --round need a TASK")
			}
			return Run(cmd.Context(), io, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "repository (default: current directory)")
	cmd.Flags().String("config", "", "config file (accepted for symmetry; a run's config is in its journal)")
	cmd.Flags().StringVar(&opts.Run, "run", "", "run ID (default: the latest run)")
	cmd.Flags().IntVar(&opts.Attempt, "attempt", 0, "attempt number (default: the latest)")
	cmd.Flags().IntVar(&opts.Round, "round", 0, "only this round (0: the first pass, then each fix round)")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "follow a live run until it ends")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "one JSON object a line")
	cmd.Flags().BoolVar(&opts.Full, "full", false, "print each gate's whole output (as kept: up to 64 KiB a run), not its last lines")
	return cmd
}

// Run prints the logs opts ask for.
func Run(ctx context.Context, io *cmdutil.IOStreams, opts *Options) error {
	repo, err := cmdutil.OpenRepo(ctx, opts.Repo)
	if err != nil {
		return err
	}
	id, err := repo.ResolveRun(opts.Run)
	if err != nil {
		return err
	}
	q := runlog.Query{Task: muster.TaskID(opts.Task), Attempt: opts.Attempt}
	if opts.HasRound {
		r := opts.Round
		q.Round = &r
	}
	p := &printer{w: io.Out, json: opts.JSON, full: opts.Full, seen: map[string]bool{}}
	if opts.Follow {
		return follow(ctx, repo.JournalPath(id), repo.RunDir(id), q, p)
	}
	events, err := repo.ReadRun(id)
	if err != nil {
		return err
	}
	entries, err := runlog.Build(events, repo.RunDir(id), q)
	if err != nil {
		if errors.Is(err, runlog.ErrNotFound) {
			return cmdutil.Invalid("run %s: %s", id, strings.TrimSuffix(err.Error(), ": "+runlog.ErrNotFound.Error()))
		}
		return cmdutil.Env("run %s: %w", id, err)
	}
	if len(entries) == 0 {
		fmt.Fprintf(io.ErrOut, "run %s: nothing has run yet\n", id)
		return nil
	}
	return p.print(entries)
}

// follow prints entries as the run's journal grows, until the run ends
// or ctx is cancelled (Ctrl-C: exit 0, the run goes on).
func follow(ctx context.Context, journalPath, dir string, q runlog.Query, p *printer) error {
	if q.Attempt == 0 {
		q.Attempt = -1
	}
	q.Chrono = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan muster.Event, 256)
	errc := make(chan error, 1)
	// The follower ends when the run ends or ctx is cancelled.
	go func() {
		errc <- watch.Follow(ctx, journalPath, watch.PollInterval, events)
		close(events)
	}()
	var all []muster.Event
	tick := time.NewTicker(watch.PollInterval)
	defer tick.Stop()
	dirty := false
	show := func() error {
		if !dirty {
			return nil
		}
		dirty = false
		entries, err := runlog.Build(all, dir, q)
		if err != nil {
			if errors.Is(err, runlog.ErrNotFound) && q.Task != "" {
				return nil // the task may be planned later (a delegated one)
			}
			return cmdutil.Env("%w", err)
		}
		return p.print(entries)
	}
	for {
		select {
		case e, ok := <-events:
			if !ok {
				if err := <-errc; err != nil && ctx.Err() == nil {
					return err
				}
				if err := show(); err != nil {
					return err
				}
				return nil
			}
			all = append(all, e)
			dirty = true
		case <-tick.C:
			if err := show(); err != nil {
				return err
			}
		}
	}
}

// printer prints entries once each (a follower rebuilds them often).
type printer struct {
	w    io.Writer
	json bool
	full bool
	seen map[string]bool
	last string // the attempt of the last header printed
}

func (p *printer) print(entries []runlog.Entry) error {
	for _, e := range entries {
		if e.Key != "" {
			if p.seen[e.Key] {
				continue
			}
			p.seen[e.Key] = true
		}
		if p.json {
			b, err := json.Marshal(e)
			if err != nil {
				return cmdutil.Env("encode: %w", err)
			}
			if _, err := p.w.Write(append(b, '\n')); err != nil {
				return cmdutil.Env("write: %w", err)
			}
			continue
		}
		if _, err := io.WriteString(p.w, p.text(e)); err != nil {
			return cmdutil.Env("write: %w", err)
		}
	}
	return nil
}

// Bounds on the text form (the JSON form has all an entry keeps).
const (
	promptLines = 12
	outputLines = 15
	gateLines   = 15
)

// text renders one entry: a header line when the attempt changes, then
// "rN kind  text", continuation lines indented. Everything is sanitised:
// agents' text may hold terminal control sequences.
func (p *printer) text(e runlog.Entry) string {
	var b strings.Builder
	attempt := fmt.Sprintf("%s#%d", e.Task, e.Attempt)
	if attempt != p.last {
		p.last = attempt
		if e.Attempt == 0 {
			fmt.Fprintf(&b, "== %s\n", e.Task)
		} else {
			fmt.Fprintf(&b, "== %s, attempt %d\n", e.Task, e.Attempt)
		}
	}
	label, body := e.Kind, e.Text
	switch e.Kind {
	case runlog.KindStarted:
		body = fmt.Sprintf("on %s (%s) at %s", e.Slot, e.Role, e.Time.Local().Format("15:04:05"))
	case runlog.KindPrompt:
		body = headLines(body, promptLines)
	case runlog.KindMessage, runlog.KindTool:
		if e.Role == muster.RoleReviewer {
			label = "reviewer " + e.Kind
		} else if e.Kind == runlog.KindMessage {
			label = "agent"
		}
	case runlog.KindOutput:
		if e.Role == muster.RoleReviewer {
			label = "reviewer output"
		}
		body = tailLines(body, outputLines)
	case runlog.KindGate, runlog.KindCheck:
		head := e.Gate
		if e.Command != "" {
			head += " (" + e.Command + ")"
		}
		if e.Exit != nil {
			head += fmt.Sprintf(" exit %d", *e.Exit)
		}
		if e.DurationMS > 0 {
			head += " in " + (time.Duration(e.DurationMS) * time.Millisecond).String()
		}
		switch {
		case e.Passed == nil:
		case *e.Passed:
			head += ": passed"
		default:
			head += ": failed"
		}
		if e.State != "" {
			head += " — " + e.State
		}
		body = head
		switch {
		case p.full && strings.TrimSpace(e.Full) != "":
			body += "\n" + strings.TrimSpace(e.Full)
		case p.full && strings.TrimSpace(e.Text) != "":
			body += "\n" + strings.TrimSpace(e.Text)
		case e.Passed != nil && !*e.Passed && strings.TrimSpace(e.Text) != "":
			body += "\n" + tailLines(strings.TrimSpace(e.Text), gateLines)
		}
	case runlog.KindReview:
		label = "review " + e.Slot
	case runlog.KindFix:
		label = fmt.Sprintf("fix round %d", e.Round)
	case runlog.KindResult:
		label = e.State
	}
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	for i, l := range lines {
		lines[i] = textsafe.Sanitize(l)
	}
	fmt.Fprintf(&b, "  r%d %-12s %s\n", e.Round, label, lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(&b, "     %-12s | %s\n", "", l)
	}
	return b.String()
}

func headLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n:n], fmt.Sprintf("… %d more lines (--json has them)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… %d lines before (--json has them)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

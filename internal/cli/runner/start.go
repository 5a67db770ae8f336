package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/owns"
	"github.com/muster-run/muster/internal/textsafe"
)

// Start validates a plan and runs it as a new run.
func Start(ctx context.Context, io *cmdutil.IOStreams, planPath string, f *preflight.Flags) (*Session, error) {
	repo, err := cmdutil.OpenRepo(ctx, f.Repo)
	if err != nil {
		return nil, err
	}
	cfg, err := preflight.LoadConfig(repo, f)
	if err != nil {
		return nil, err
	}
	return start(ctx, io, repo, planPath, f, cfg, nil)
}

// StartWith runs a plan as a new run with a config already loaded;
// onEvent, if set, sees every event.
func StartWith(ctx context.Context, io *cmdutil.IOStreams, planPath string, f *preflight.Flags, cfg *muster.Config, onEvent func(*muster.Event, *engine.State)) (*Session, error) {
	repo, err := cmdutil.OpenRepo(ctx, f.Repo)
	if err != nil {
		return nil, err
	}
	return start(ctx, io, repo, planPath, f, cfg, onEvent)
}

// start validates the plan and drives it as a new run in repo.
func start(ctx context.Context, io *cmdutil.IOStreams, repo *cmdutil.Repo, planPath string, f *preflight.Flags, cfg *muster.Config, onEvent func(*muster.Event, *engine.State)) (*Session, error) {
	fc, err := preflight.JoinFleetCrew(ctx, io, cfg, f)
	if err != nil {
		return nil, err
	}
	runID := f.RunID
	if runID == "" {
		runID = cmdutil.NewRunID(time.Now())
	} else if err := preflight.CheckRunID(runID); err != nil {
		return nil, err
	}
	plan, probs, err := preflight.Preflight(ctx, repo, planPath, cfg, f.Strict)
	if err != nil {
		return nil, err
	}
	preflight.PrintProblems(io.ErrOut, probs)
	if len(probs.Errors()) > 0 {
		return nil, &cmdutil.Silent{Err: probs.Errors()}
	}
	// A detached HEAD has no branch to merge into (--merge says so).
	ref, err := git.CurrentBranch(ctx, repo.Top)
	if err != nil && !errors.Is(err, git.ErrDetached) {
		return nil, classifyGit(err)
	}
	s := &Session{IO: io, Repo: repo, Flags: f, Config: cfg, Plan: plan, RunID: runID, Ref: ref, OnEvent: onEvent, fleet: fc}
	if w := uncommittedOwned(ctx, repo.Top, plan); w != "" {
		s.warnings = append(s.warnings, w)
	}
	err = s.Drive(ctx)
	return s, s.finish(ctx, err)
}

// maxNamed caps the files the uncommitted-edits warning names.
const maxNamed = 10

// uncommittedOwned warns, naming them, of uncommitted edits (changed or
// untracked files) to paths the plan's tasks own: the run starts from
// HEAD, so its clones do not have them, and a task may redo or undo
// them. "" when there are none (or git cannot say).
func uncommittedOwned(ctx context.Context, top string, plan *muster.Plan) string {
	paths, err := git.Uncommitted(ctx, top)
	if err != nil || len(paths) == 0 {
		return ""
	}
	var owned []string
	for _, p := range paths {
		for _, t := range plan.Tasks {
			if owns.Match(t.Owns, p) {
				owned = append(owned, p)
				break
			}
		}
	}
	if len(owned) == 0 {
		return ""
	}
	named := owned
	more := ""
	if len(named) > maxNamed {
		named, more = named[:maxNamed], fmt.Sprintf(" and %d more", len(owned)-maxNamed)
	}
	return fmt.Sprintf("uncommitted edits to files tasks own are not in this run, which starts from HEAD: %s%s; commit them first to include them",
		textsafe.Sanitize(strings.Join(named, ", ")), more)
}

// finish prints the summary, merges when asked, and turns the outcome
// into the command's error (and so its exit code).
func (s *Session) finish(ctx context.Context, runErr error) error {
	if s.State == nil || s.State.Run == "" {
		return runErr
	}
	Summary(s.IO.ErrOut, s.State, s.Dir, s.Tip)
	if s.Receipt != nil {
		fmt.Fprintf(s.IO.ErrOut, "  receipt    sealed: %d journal lines, chain %s (muster verify %s)\n", s.Receipt.Journal.Lines, textsafe.Short(s.Receipt.Journal.Hash), s.RunID)
	}
	if s.State.RunState == muster.RunFailed && !errors.Is(runErr, muster.ErrInterrupted) {
		fmt.Fprintf(s.IO.ErrOut, "  next       muster logs %s (why), then muster resume %s (runs what did not succeed again)\n", logsArg(s.RunID), s.RunID)
	}
	if s.Flags.Merge && (runErr != nil || s.State.RunState != muster.RunSucceeded) {
		fmt.Fprintf(s.IO.ErrOut, "not merged: --merge fast-forwards %s only when every task succeeded; the run branch %s is left for you\n", s.refOrRecorded(), s.State.Branch)
	}
	if errors.Is(runErr, muster.ErrInterrupted) {
		return &muster.Error{Code: muster.CodeInterrupted, Message: "interrupted: the run is resumable with muster resume " + s.RunID}
	}
	var pe *muster.PanicError
	if errors.As(runErr, &pe) {
		// A bug of muster's: the stack is for its report.
		fmt.Fprintf(s.IO.ErrOut, "muster stopped the run after an internal error; please report it with this stack:\n%s\n", pe.Stack)
	}
	if runErr != nil {
		return runErr
	}
	if s.State.RunState != muster.RunSucceeded {
		return &cmdutil.Silent{Err: &muster.Error{Code: muster.CodeFailed, Message: "the run ended with failed or skipped tasks"}}
	}
	if s.Flags.Merge {
		// An unmerged --merge is a failure (exit 1): `muster run --merge &&
		// deploy` must not deploy a branch that did not move.
		notMerged := func(why string) error {
			fmt.Fprintf(s.IO.ErrOut, "not merged: %s\nthe run branch %s is left for you to merge\n", why, s.State.Branch)
			return &cmdutil.Silent{Err: &muster.Error{Code: muster.CodeFailed, Message: "not merged: " + why}}
		}
		if s.refOrRecorded() == "" {
			return notMerged("HEAD was detached when the run started, so there is no branch to fast-forward")
		}
		// --merge runs the user's own hooks and config: only those the run
		// started with.
		if changed, err := git.HooksChanged(context.WithoutCancel(ctx), s.Repo.Top, filepath.Join(s.Dir, cmdutil.HooksFile)); err != nil || len(changed) > 0 {
			why := strings.Join(changed, ", ")
			if err != nil {
				why = err.Error()
			}
			return notMerged("your repository's config or hooks changed since the run started (" + why + "); --merge would run them in your work tree")
		}
		if err := git.FastForward(context.WithoutCancel(ctx), s.Repo.Top, s.refOrRecorded(), s.State.Branch); err != nil {
			return notMerged(err.Error())
		}
		fmt.Fprintf(s.IO.ErrOut, "merged: %s fast-forwarded to %s\n", s.refOrRecorded(), textsafe.Short(s.Tip))
	}
	return nil
}

// logsArg is the --run argument of muster logs for a run.
func logsArg(run string) string { return "--run " + run }

func (s *Session) refOrRecorded() string {
	if s.Ref != "" {
		return s.Ref
	}
	for _, e := range s.Events {
		if e.Type == muster.EvRunStarted {
			return e.Ref
		}
	}
	return ""
}

// Summary prints what a run did: tasks by state, time, parallelism, and
// usage by executor clone.
func Summary(w io.Writer, s *engine.State, dir, tip string) {
	c := s.Counts()
	// Times leave out the gaps between a crash (or an interrupt) and the
	// resume: muster was not running then.
	wall := s.Elapsed()
	var busy time.Duration
	for _, t := range s.Tasks {
		busy += s.Active(t.Started, t.Ended)
	}
	fmt.Fprintf(w, "\nrun %s: %s\n", s.Run, s.RunState)
	fmt.Fprintf(w, "  tasks      %d succeeded, %d failed, %d skipped, %d cancelled, %d pending (of %d)\n",
		c[muster.StateSucceeded], c[muster.StateFailed], c[muster.StateSkipped], c[muster.StateCancelled], c[muster.StatePending], len(s.Tasks))
	if wall > 0 {
		gaps := ""
		if n := len(s.Gaps); n > 0 {
			var off time.Duration
			for _, g := range s.Gaps {
				off += g.To.Sub(g.From)
			}
			gaps = fmt.Sprintf(" (active; %s not running between a stop and %d resume(s) left out)", off.Round(100*time.Millisecond), n)
		}
		fmt.Fprintf(w, "  time       %s wall, %s of task work, parallelism %.2fx%s\n", wall.Round(100*time.Millisecond), busy.Round(100*time.Millisecond), busy.Seconds()/wall.Seconds(), gaps)
	}
	fmt.Fprintf(w, "  usage      %s tokens, %s\n", muster.Group(s.Usage.Tokens()), muster.FormatUSD(s.Usage.CostMicros))
	var failed []string
	for _, id := range s.Order {
		t := s.Tasks[id]
		if t.State == muster.StateFailed || t.State == muster.StateSkipped || t.State == muster.StateCancelled {
			failed = append(failed, fmt.Sprintf("    %-10s %s: %s", t.State, id, textsafe.Sanitize(t.Reason)))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "  not done\n%s\n", strings.Join(failed, "\n"))
	}
	fmt.Fprintf(w, "  branch     %s at %s (base %s)\n", s.Branch, textsafe.Short(tip), textsafe.Short(s.Base))
	if dir != "" {
		fmt.Fprintf(w, "  run dir    %s\n", dir)
	}
}

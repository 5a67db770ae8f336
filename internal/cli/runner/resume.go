package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/config"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/planfile"
)

// Resume finishes an interrupted or failed run: every task that has not
// succeeded runs again, with the flags given now.
func Resume(ctx context.Context, io *cmdutil.IOStreams, runID string, f *preflight.Flags) (*Session, error) {
	return ResumeReopening(ctx, io, runID, f, nil)
}

// ResumeReopening is Resume that also reopens succeeded tasks with
// feedback (TaskReopened events: muster pr --follow), even on a run
// where every task succeeded.
func ResumeReopening(ctx context.Context, io *cmdutil.IOStreams, runID string, f *preflight.Flags, reopen []muster.Event) (*Session, error) {
	repo, err := cmdutil.OpenRepo(ctx, f.Repo)
	if err != nil {
		return nil, err
	}
	id, err := repo.ResolveRun(runID)
	if err != nil {
		return nil, err
	}
	if repo.IsPlanSession(id) {
		return nil, cmdutil.Invalid("%s is a plan session (muster plan), not a run: there is nothing to resume", id)
	}
	events, err := repo.ReadRun(id)
	if err != nil {
		return nil, err
	}
	st, err := engine.Replay(events)
	if err != nil {
		return nil, cmdutil.Env("journal of run %s does not replay: %w", id, err)
	}
	// The run goes on with the config it started with, unless --config
	// names another file; flags given now apply on top either way.
	cfg := st.Config
	if f.Config != "" {
		if cfg, err = config.Load(f.Config); err != nil {
			return nil, err
		}
	} else if cfg == nil {
		cfg = &muster.Config{}
	} else {
		preflight.RestoreSecrets(cfg)
	}
	if err := preflight.ApplyFlags(cfg, f); err != nil {
		return nil, err
	}
	// An edited plan file is checked (and refused) before anything is
	// joined or written.
	ad, err := planAdoption(ctx, io, repo, id, events, st, cfg, f)
	if err != nil {
		return nil, err
	}
	var fc *preflight.FleetCrew
	done := allSucceeded(st) && len(reopen) == 0 && ad == nil
	if !done {
		if fc, err = preflight.JoinFleetCrew(ctx, io, cfg, f); err != nil {
			return nil, err
		}
	}
	if done {
		// A process killed after the run's end left no receipt (and
		// perhaps worktrees): finish that, and change nothing else.
		s := &Session{IO: io, Repo: repo, RunID: id}
		if err := s.sealFinished(ctx, st); err != nil {
			return nil, err
		}
		fmt.Fprintf(io.ErrOut, "run %s: every task succeeded already; nothing to do\n", id)
		return &Session{State: st}, nil
	}
	plan := &muster.Plan{Source: events[0].Plan}
	// The tasks come from the journal; the brief (and the tasks' gate
	// files, which the run reserves) from the plan adopted now or the
	// run's newest copy of it.
	if ad != nil {
		plan.Brief, plan.Title, plan.Tasks = ad.plan.Brief, ad.plan.Title, ad.plan.Tasks
	} else if p := cmdutil.NewestPlanCopy(repo.RunDir(id), events); p != "" {
		pl, err := planfile.Load(p)
		if err != nil {
			fmt.Fprintf(io.ErrOut, "warning: the run's copy of the plan does not load, so prompts go without its brief: %v\n", err)
		} else {
			plan.Brief, plan.Title, plan.Tasks = pl.Brief, pl.Title, pl.Tasks
		}
	}
	s := &Session{IO: io, Repo: repo, Flags: f, Config: cfg, Plan: plan, RunID: id, Resume: true, Events: events, Reopen: reopen, Base: st.Base, fleet: fc, adopt: ad}
	err = s.Drive(ctx)
	if errors.Is(err, errEndedMeanwhile) {
		fmt.Fprintf(io.ErrOut, "run %s: every task succeeded already; nothing to do\n", id)
		return &Session{State: s.State}, nil
	}
	return s, s.finish(ctx, err)
}

// errEndedMeanwhile: the run succeeded while the resume waited for its lock.
var errEndedMeanwhile = errors.New("the run ended meanwhile")

func allSucceeded(st *engine.State) bool {
	if len(st.Tasks) == 0 {
		return false
	}
	for _, t := range st.Tasks {
		if t.State != muster.StateSucceeded {
			return false
		}
	}
	return st.RunState == muster.RunSucceeded
}

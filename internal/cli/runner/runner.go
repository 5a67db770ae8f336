// Package runner wires a run together for the run, resume and demo
// commands: config, plan, workspace, journal, crew and driver, with
// signals, progress lines and the closing summary.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/gate"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/agents"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/owns"
	"github.com/muster-run/muster/internal/proc"
	"github.com/muster-run/muster/internal/procid"
	"github.com/muster-run/muster/internal/reserve"
	"github.com/muster-run/muster/journal"
	"github.com/muster-run/muster/planfile"
	"github.com/muster-run/muster/receipt"
	"github.com/muster-run/muster/tui"
)

// Session is one driving of a run (new or resumed).
type Session struct {
	IO     *cmdutil.IOStreams
	Repo   *cmdutil.Repo
	Flags  *preflight.Flags
	Config *muster.Config
	Plan   *muster.Plan
	RunID  string
	Ref    string // the user's branch
	Resume bool
	Events []muster.Event // replayed, when resuming
	// Reopen (a resume of muster pr --follow) are TaskReopened events for
	// succeeded tasks that take their pull request's feedback.
	Reopen []muster.Event
	// OnEvent, if set, also sees every event (the demo's counters).
	OnEvent func(e *muster.Event, s *engine.State)
	// fleet is the fleet the run joined (nil: none).
	fleet *preflight.FleetCrew

	State *engine.State
	// Receipt is the sealed receipt, once the run has ended.
	Receipt *receipt.Receipt
	Dir     string
	Base    string
	Tip     string
}

// Drive opens the workspace and journal and runs the driver to the end.
func (s *Session) Drive(ctx context.Context) error {
	prices, err := preflight.Prices(s.Config)
	if err != nil {
		return err
	}
	confinement, warnings, err := preflight.RepoConfinement(s.Repo, s.Config)
	if err != nil {
		return err
	}
	// A resume takes the run's lock before it touches any worktree, so
	// that it never disturbs a run another process drives.
	var j *journal.Journal
	var replayed []muster.Event
	gopts := git.Options{Repo: s.Repo.Top, RunID: s.RunID, Base: s.Base, Resume: s.Resume, Keep: s.Config.CleanKeep(), MaxClones: s.Config.Pool.MaxClones, Guard: s.Config.Run.Guard,
		Reserved: reserve.Paths(s.Repo.Top, s.Config, s.Plan.Source), GateFiles: reserve.GateFiles(s.Repo.Top, s.Config, s.Plan), MaxFileBytes: s.Config.Run.MaxFileBytes}
	if gopts.Guard == "" {
		gopts.Guard = preflight.DefaultGuard(confinement)
	}
	if s.Resume {
		if j, replayed, err = openJournal(s.Repo, s.RunID); err != nil {
			return err
		}
		defer j.Close()
		st, err := engine.Replay(replayed)
		if err != nil {
			return cmdutil.Env("journal of run %s does not replay: %v", s.RunID, err)
		}
		// The run may have ended while this process waited for its lock.
		if allSucceeded(st) && len(s.Reopen) == 0 {
			s.State = st
			return errEndedMeanwhile
		}
		// The run branch must be where the journal says muster left it.
		gopts.Tip = st.Tip
		if st.Moving != nil && st.Moving.From == st.Tip {
			gopts.Moving = st.Moving.Commit
		}
	}
	pruneStale(ctx, s.Repo, s.RunID)
	ws, err := git.Open(ctx, gopts)
	if err != nil {
		return classifyGit(err)
	}
	defer ws.Close(context.WithoutCancel(ctx))
	s.Dir = ws.RunDir()
	s.Base = ws.Base()
	if !s.Resume {
		if j, replayed, err = openJournal(s.Repo, s.RunID); err != nil {
			return err
		}
		defer j.Close()
		if len(replayed) > 0 {
			return cmdutil.Invalid("run %s exists already: pick another --run-id or resume it", s.RunID)
		}
		if err := copyPlan(s.Plan.Source, s.Dir); err != nil {
			return cmdutil.Env("copy plan: %w", err)
		}
		if err := git.RecordHooks(ctx, s.Repo.Top, filepath.Join(s.Dir, cmdutil.HooksFile)); err != nil {
			return cmdutil.Env("record the repository's config and hooks: %w", err)
		}
	}
	errOut := s.IO.ErrOut
	pr := tui.NewPrinter(errOut)
	pr.Color, pr.Verbose = cmdutil.ColorEnabled(errOut) && !s.Flags.Plain, s.Flags.Verbose
	for _, e := range replayed {
		pr.Fold(e) // the count and the clock go on from where the run was
	}
	// On a terminal, the live view shows the run; q leaves it (the run
	// goes on in plain lines), ctrl+c in it stops the run.
	var live *tui.Live
	if !s.Flags.Plain && tui.Interactive(s.IO.In, errOut) { // not under CI, nor on a dumb terminal
		var stop context.CancelCauseFunc
		ctx, stop = context.WithCancelCause(ctx)
		defer stop(nil)
		// The view outlives a cancelled run, to draw its last events.
		live = tui.Start(context.WithoutCancel(ctx), s.IO.In, errOut, tui.Options{
			Budget:      s.Config.Run.BudgetUSDMicros,
			OnInterrupt: func() { stop(muster.ErrInterrupted) },
		})
		defer live.Close()
		for _, e := range replayed {
			live.Send(e)
		}
	}
	var jsonOut *jsonStream
	if s.Flags.JSON {
		jsonOut = newJSONStream(s.IO.Out)
	}
	// Each key to its executor: no other agent, no gate, no setup or
	// code step gets an api_key_env variable, whatever its name.
	warnings = append(warnings, s.Config.ScopeKeys()...)
	proc.SetKeyVars(s.Config.KeyVars()...)
	preflight.AllowEnv(s.Config)
	runner := gate.Runner{Grace: s.Config.Grace(), Allow: s.Config.Run.EnvAllow, Confine: confinement,
		Net: egress.Open, Network: s.Config.GateNetwork(), TmpRoot: filepath.Join(s.Dir, "scratch", "gates")}
	// Setup may write the package caches; agents and gates only read them.
	setup := runner
	setup.Confine = confinement.With(setupCaches(s.Config)...)
	setup.Network = s.Config.SetupNetworkOf()
	ledger := egress.NewLedger(s.Config.Run)
	crew, err := agents.CrewWithin(s.Config, runner, ledger)
	if err != nil {
		return err
	}
	if s.fleet != nil {
		defer s.fleet.Conn.Close()
		d, remote, err := dispatch(ctx, s.fleet, s.RunID, s.Repo.Top, s.Base, s.Dir)
		if err != nil {
			return err
		}
		defer d.Close()
		for n, e := range remote {
			crew[n] = e
		}
	}
	if s.Resume {
		// What the agents of a muster that died (kill -9) left running:
		// every process marked by one of the run's earlier musters.
		// The agents' own process groups, which the journal records, the
		// driver checks and stops (KillOrphan); this is what left them.
		owners, groups := map[string]bool{}, map[int]bool{}
		for _, e := range replayed {
			if e.Owner != "" {
				owners[e.Owner] = true
			}
			if e.Type == muster.EvAgentStarted && e.PID > 0 {
				groups[e.PID] = true
			}
		}
		if n := proc.KillStale(owners, groups); n > 0 {
			warnings = append(warnings, fmt.Sprintf("stopped %d processes the interrupted run's agents left running", n))
		}
	}
	opts := driver.Options{
		RunID: s.RunID, PlanPath: s.Plan.Source, Plan: s.Plan, PlanCanon: planfile.CanonicalVersion, Config: preflight.Journaled(s.Config), Base: s.Base, Branch: ws.Branch(), Ref: s.Ref,
		Replayed: replayed, Journal: j, Workspace: ws, Executors: crew, Gates: runner, Setup: setup, Price: prices.Cost,
		ScratchDir: filepath.Join(s.Dir, "scratch"), Confine: confinement, Warnings: warnings, Owner: proc.Owner(),
		LogDir: filepath.Join(s.Dir, muster.LogDir), Redactor: preflight.Redactor(s.Config),
		KillOrphan: killOrphan, Identify: procid.Of, CrashAt: os.Getenv(CrashEnv),
		Fragment: fragment(s.Config), Reserved: gopts.Reserved, GateFiles: gopts.GateFiles,
		Overlap: func(a, b []string) bool { _, _, ok := owns.Overlaps(a, b); return ok },
		OnEvent: func(e *muster.Event, st *engine.State) {
			if e.Type == muster.EvTokensUsed {
				ledger.Observe(st.Usage)
			}
			if live != nil && live.Active() {
				live.Send(*e)
				pr.Fold(*e)
			} else {
				_ = pr.Print(*e) // progress on stderr; the journal is the record
			}
			if jsonOut != nil {
				jsonOut.write(e)
			}
			if s.OnEvent != nil {
				s.OnEvent(e, st)
			}
		},
	}
	if s.Resume {
		opts.ResumeConfig = preflight.Journaled(s.Config)
		opts.Reopen = s.Reopen
	}
	st, runErr := driver.Run(ctx, opts)
	s.State = st
	if live != nil {
		_ = live.Close() // the run's outcome is driver.Run's
	}
	if tip, err := ws.Tip(context.WithoutCancel(ctx)); err == nil {
		s.Tip = tip
	} else if st != nil {
		// The branch moved: the receipt seals muster's own last tip, and
		// verify names the difference.
		s.Tip = st.Tip
	}
	if st != nil && st.Run != "" {
		if err := s.seal(j, s.Tip); err != nil && runErr == nil {
			runErr = err
		}
	}
	return runErr
}

func classifyGit(err error) error {
	if errors.Is(err, git.ErrBranchExists) {
		return cmdutil.Invalid("%w: pick another --run-id or resume it", err)
	}
	var ge *git.GitError
	if errors.As(err, &ge) {
		return cmdutil.Env("git: %w", err)
	}
	var me *muster.Error
	if errors.As(err, &me) {
		return err
	}
	return cmdutil.Env("%w", err)
}

func copyPlan(src, dir string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	name := "plan.md"
	if planfile.IsYAML(src) {
		name = "plan" + strings.ToLower(filepath.Ext(src))
	}
	return os.WriteFile(filepath.Join(dir, name), data, 0o644)
}

// setupCaches are the [setup] package caches, made when missing (a
// confined step may write only paths that exist).
func setupCaches(cfg *muster.Config) []string {
	home, _ := os.UserHomeDir()
	var out []string
	for _, p := range cfg.SetupCaches(home) {
		if os.MkdirAll(p, 0o755) == nil {
			out = append(out, p)
		}
	}
	return out
}

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
	"slices"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/gate"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/agentkit"
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
	// adopt is the edited plan a resume adopts (nil: none).
	adopt *adoption
	// warnings are said at the run's start with the others (journaled).
	warnings []string

	State *engine.State
	// Receipt is the sealed receipt, once the run has ended.
	Receipt *receipt.Receipt
	Dir     string
	Base    string
	Tip     string
}

// Drive opens the workspace and journal and runs the driver to the end:
// open, then the outputs people and programs read, the crew, the drive
// itself and the seal.
func (s *Session) Drive(ctx context.Context) error {
	prices, err := preflight.Prices(s.Config)
	if err != nil {
		return err
	}
	confinement, warnings, err := preflight.RepoConfinement(s.Repo, s.Config)
	if err != nil {
		return err
	}
	var undo closers
	defer undo.close()
	o, err := s.open(ctx, confinement, &undo)
	if err != nil {
		return err
	}
	ctx, out := s.outputs(ctx, o.replayed, &undo)
	c, err := s.crew(ctx, confinement, &undo)
	if err != nil {
		return err
	}
	warnings = append(warnings, c.warnings...)
	warnings = append(warnings, s.warnings...)
	warnings = append(warnings, killStale(o.replayed, o.ws.Holders())...)
	opts := s.options(o, c, out, prices.Cost, confinement, warnings)
	st, runErr := driver.Run(ctx, opts)
	return s.end(ctx, o, out, st, runErr)
}

// closers are what Drive closes when it returns, the last opened first.
type closers []func()

func (c *closers) add(f func()) { *c = append(*c, f) }

func (c *closers) close() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
}

// opened is a run's workspace and journal, and what the journal held.
type opened struct {
	ws       *git.Workspace
	j        *journal.Journal
	replayed []muster.Event
	lastSeq  int64 // the replayed journal's last line
	gopts    git.Options
}

// open takes the run's journal and workspace. A resume takes the run's
// lock before it touches any worktree, so that it never disturbs a run
// another process drives; a new run records its plan and hooks.
func (s *Session) open(ctx context.Context, confinement *muster.Confinement, undo *closers) (*opened, error) {
	o := &opened{}
	var err error
	o.gopts = git.Options{Repo: s.Repo.Top, RunID: s.RunID, Base: s.Base, Resume: s.Resume, Keep: s.Config.CleanKeep(), MaxClones: s.Config.Pool.MaxClones, Guard: s.Config.Run.Guard,
		Reserved: reserve.Paths(s.Repo.Top, s.Config, s.Plan.Source), GateFiles: reserve.GateFiles(s.Repo.Top, s.Config, s.Plan), MaxFileBytes: s.Config.Run.MaxFileBytes}
	if o.gopts.Guard == "" {
		o.gopts.Guard = preflight.DefaultGuard(confinement)
	}
	if s.Resume {
		if o.j, o.replayed, err = openJournal(s.Repo, s.RunID); err != nil {
			return nil, err
		}
		undo.add(func() { o.j.Close() })
		st, err := engine.Replay(o.replayed)
		if err != nil {
			return nil, cmdutil.Env("journal of run %s does not replay: %w", s.RunID, err)
		}
		// The run may have ended while this process waited for its lock.
		if allSucceeded(st) && len(s.Reopen) == 0 && s.adopt == nil {
			s.State = st
			return nil, errEndedMeanwhile
		}
		// The run branch must be where the journal says muster left it.
		o.gopts.Tip, o.lastSeq = st.Tip, st.LastSeq
		if st.Moving != nil && st.Moving.From == st.Tip {
			o.gopts.Moving = st.Moving.Commit
		}
	}
	pruneStale(ctx, s.Repo, s.RunID)
	if o.ws, err = git.Open(ctx, o.gopts); err != nil {
		return nil, classifyGit(err)
	}
	undo.add(func() { o.ws.Close(context.WithoutCancel(ctx)) })
	s.Dir = o.ws.RunDir()
	s.Base = o.ws.Base()
	if s.Resume {
		if s.adopt != nil {
			if err := s.adopt.writeVersion(s.Dir, o.lastSeq); err != nil {
				return nil, err
			}
		}
		return o, nil
	}
	if o.j, o.replayed, err = openJournal(s.Repo, s.RunID); err != nil {
		return nil, err
	}
	undo.add(func() { o.j.Close() })
	if len(o.replayed) > 0 {
		return nil, cmdutil.Invalid("run %s exists already: pick another --run-id or resume it", s.RunID)
	}
	if err := copyPlan(s.Plan.Source, s.Dir); err != nil {
		return nil, cmdutil.Env("copy plan: %w", err)
	}
	if err := git.RecordHooks(ctx, s.Repo.Top, filepath.Join(s.Dir, cmdutil.HooksFile)); err != nil {
		return nil, cmdutil.Env("record the repository's config and hooks: %w", err)
	}
	return o, nil
}

// outputs are where the run's events go besides the journal: the plain
// printer or the live view on stderr, JSON lines on stdout.
type outputs struct {
	pr   *tui.Printer
	live *tui.Live
	json *jsonStream
}

// outputs starts them. On a terminal, the live view shows the run; q
// leaves it (the run goes on in plain lines), ctrl+c in it stops the run
// (through the context it returns).
func (s *Session) outputs(ctx context.Context, replayed []muster.Event, undo *closers) (context.Context, *outputs) {
	out := &outputs{}
	errOut := s.IO.ErrOut
	out.pr = tui.NewPrinter(errOut)
	out.pr.Color, out.pr.Verbose = cmdutil.ColorEnabled(errOut) && !s.Flags.Plain, s.Flags.Verbose
	for _, e := range replayed {
		out.pr.Fold(e) // the count and the clock go on from where the run was
	}
	if !s.Flags.Plain && tui.Interactive(s.IO.In, errOut) { // not under CI, nor on a dumb terminal
		var stop context.CancelCauseFunc
		ctx, stop = context.WithCancelCause(ctx)
		undo.add(func() { stop(nil) })
		// The view outlives a cancelled run, to draw its last events.
		out.live = tui.Start(context.WithoutCancel(ctx), s.IO.In, errOut, tui.Options{
			Budget:      s.Config.Run.BudgetUSDMicros,
			OnInterrupt: func() { stop(muster.ErrInterrupted) },
			Detached: fmt.Sprintf("left the live view: run %s goes on below in plain lines; Ctrl-C stops it, muster watch %s shows the view again",
				s.RunID, s.RunID),
		})
		undo.add(func() { out.live.Close() })
		for _, e := range replayed {
			out.live.Send(e)
		}
	}
	if s.Flags.JSON {
		out.json = newJSONStream(s.IO.Out)
	}
	return ctx, out
}

// send gives an event to the outputs.
func (o *outputs) send(e *muster.Event) {
	if o.live != nil && o.live.Active() {
		o.live.Send(*e)
		o.pr.Fold(*e)
	} else {
		_ = o.pr.Print(*e) // progress on stderr; the journal is the record
	}
	if o.json != nil {
		o.json.write(e)
	}
}

// crewed is the run's crew, its gate and setup runners and spending
// ledger, and what wiring them warned of.
type crewed struct {
	crew         map[string]muster.Executor
	joins        <-chan driver.Joined // executors that join the fleet mid-run
	gates, setup gate.Runner
	ledger       *egress.Ledger
	warnings     []string
}

// crew wires the executors (and the fleet's, when the run joined one).
func (s *Session) crew(ctx context.Context, confinement *muster.Confinement, undo *closers) (*crewed, error) {
	c := &crewed{}
	// Each key to its executor: no other agent, no gate, no setup or
	// code step gets an api_key_env variable, whatever its name.
	c.warnings = s.Config.ScopeKeys()
	if w := agentkit.LoginWarning(agentkit.LoginHolders(s.Config, nil, nil)); w != "" {
		c.warnings = append(c.warnings, w)
	}
	proc.SetKeyVars(s.Config.KeyVars()...)
	preflight.AllowEnv(s.Config)
	c.gates = gate.Runner{Grace: s.Config.Grace(), Allow: s.Config.Run.EnvAllow, Confine: confinement,
		Net: egress.Open, Network: s.Config.GateNetwork(), TmpRoot: filepath.Join(s.Dir, "scratch", "gates")}
	if confinement != nil {
		// The gates' own Go build cache, which no agent may write.
		c.gates.BuildCache, _ = git.GatesCache(s.Repo.GitDir)
	}
	// Setup may write the package caches; agents and gates only read them.
	c.setup = c.gates
	c.setup.Confine = setupCredentials(confinement.With(preflight.SetupCaches(s.Config)...))
	c.setup.Network = s.Config.SetupNetworkOf()
	c.ledger = egress.NewLedger(s.Config.Run)
	var err error
	if c.crew, err = agents.CrewWithin(s.Config, c.gates, c.ledger); err != nil {
		return nil, err
	}
	if s.fleet == nil {
		return c, nil
	}
	undo.add(func() { s.fleet.Conn.Close() })
	d, remote, err := dispatch(ctx, s.fleet, s.RunID, s.Repo.Top, s.Base, s.Dir, s.fleetResume(), c.ledger)
	if err != nil {
		return nil, err
	}
	undo.add(func() { d.Close() })
	for n, e := range remote {
		c.crew[n] = e
	}
	joins, stop := watchJoins(ctx, s.IO.ErrOut, s.fleet, d, s.Config)
	undo.add(stop)
	c.joins = joins
	return c, nil
}

// killStale stops what the agents of a muster that died (kill -9) left
// running: every process marked by one of the run's earlier musters (a
// resume) or by a muster that held one of the repository's clones last
// (holders: a new run reusing the clones of a run that was killed, whose
// unconfined agents would otherwise go on writing in them). The agents'
// own process groups, which the journal records, the driver checks and
// stops (KillOrphan); this is what left them. A muster still running is
// never touched (proc.KillStale).
func killStale(replayed []muster.Event, holders []string) []string {
	owners, groups := map[string]bool{}, map[int]bool{}
	for _, h := range holders {
		owners[h] = true
	}
	for _, e := range replayed {
		if e.Owner != "" {
			owners[e.Owner] = true
		}
		if e.Type == muster.EvAgentStarted && e.PID > 0 {
			groups[e.PID] = true
		}
	}
	if len(owners) == 0 {
		return nil
	}
	if n := proc.KillStale(owners, groups); n > 0 {
		return []string{fmt.Sprintf("stopped %d processes that the agents of an interrupted muster left running", n)}
	}
	return nil
}

// options are the driver's, from what Drive opened and wired.
func (s *Session) options(o *opened, c *crewed, out *outputs, price func(string, muster.Usage) (int64, bool), confinement *muster.Confinement, warnings []string) driver.Options {
	opts := driver.Options{
		RunID: s.RunID, PlanPath: s.Plan.Source, Plan: s.Plan, PlanCanon: planfile.CanonicalVersion, Config: preflight.Journaled(s.Config), Base: s.Base, Branch: o.ws.Branch(), Ref: s.Ref,
		Replayed: o.replayed, Journal: o.j, Workspace: o.ws, Executors: c.crew, Joins: c.joins, Gates: c.gates, Setup: c.setup, Price: price,
		ScratchDir: filepath.Join(s.Dir, "scratch"), Confine: confinement, Warnings: warnings, Owner: proc.Owner(),
		LogDir: filepath.Join(s.Dir, muster.LogDir), Redactor: preflight.Redactor(s.Config),
		KillOrphan: killOrphan, Identify: procid.Of, CrashAt: os.Getenv(CrashEnv),
		Fragment: fragment(s.Config), Reserved: o.gopts.Reserved, GateFiles: o.gopts.GateFiles,
		Overlap: func(a, b []string) bool { _, _, ok := owns.Overlaps(a, b); return ok },
		OnEvent: func(e *muster.Event, st *engine.State) {
			if e.Type == muster.EvTokensUsed {
				c.ledger.Observe(st.Usage)
			}
			out.send(e)
			if s.OnEvent != nil {
				s.OnEvent(e, st)
			}
		},
	}
	if !s.Resume {
		// How long the plan's tasks took in the newest earlier runs here.
		opts.Expected = journal.Durations(filepath.Dir(s.Dir), s.RunID, s.Plan.Tasks)
	} else {
		opts.ResumeConfig = preflight.Journaled(s.Config)
		opts.Reopen = s.Reopen
		if s.adopt != nil {
			opts.Adopt = &s.adopt.event
		}
	}
	return opts
}

// end records where the run left its branch and seals the receipt.
func (s *Session) end(ctx context.Context, o *opened, out *outputs, st *engine.State, runErr error) error {
	s.State = st
	if out.live != nil {
		_ = out.live.Close() // the run's outcome is driver.Run's
	}
	if tip, err := o.ws.Tip(context.WithoutCancel(ctx)); err == nil {
		s.Tip = tip
	} else if st != nil {
		// The branch moved: the receipt seals muster's own last tip, and
		// verify names the difference.
		s.Tip = st.Tip
	}
	if st != nil && st.Run != "" {
		if err := s.seal(o.j, s.Tip); err != nil && runErr == nil {
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

// setupCredentials shows setup steps, read-only, the registry
// credentials every other invocation finds hidden
// (confine.RegistryCredentials, those present); c is a copy of its own.
func setupCredentials(c *muster.Confinement) *muster.Confinement {
	home, err := os.UserHomeDir()
	if c == nil || err != nil || !filepath.IsAbs(home) {
		return c
	}
	var show []string
	for _, rel := range confine.RegistryCredentials {
		p := filepath.Join(home, rel)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			show = append(show, p)
		}
	}
	hide := c.Hide[:0:0]
	for _, h := range c.Hide {
		if !slices.Contains(show, h) {
			hide = append(hide, h)
		}
	}
	c.Hide = hide
	return c.WithReadOnly(show...)
}

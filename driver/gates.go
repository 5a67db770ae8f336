package driver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
)

// baselineSlot is the worktree where gates run on base commits and tips.
const baselineSlot = "muster-baseline"

// gates runs the plan-wide gates and the task's own in the worktree. It
// returns feedback for the coder and a failure reason when a gate fails
// that is the task's to fix: a plan-wide gate that fails on the task's
// base too is pre-existing and not charged (for go test output, only
// newly failing tests are charged); a task gate is an acceptance test and
// must pass whatever it did on the base.
func (w *worker) gates(ctx context.Context, round int, change *muster.Change) (feedback, failed string) {
	if w.d.opts.Gates == nil {
		return "", ""
	}
	taskGates := w.taskGates()
	if len(w.cfg.Gates) == 0 && len(taskGates) == 0 {
		return "", ""
	}
	w.send(muster.Event{Type: muster.EvPhase, Phase: "gates", Round: round})
	var fb []string
	// The gates run on what the agent left, its namespace gone: one that
	// rewrites it fails the round ("gate G changed P"), whatever its
	// exit status.
	var staged map[string]string
	if len(w.remoteGates) == 0 {
		staged = changeContents(w.dir, change)
	}
	changed := func(g muster.GateSpec) bool {
		paths := rewritten(w.dir, staged)
		if len(paths) == 0 {
			return false
		}
		fb = append(fb, gateChangedFeedback(g, paths))
		if failed == "" {
			failed = gateChangedReason(g, paths)
		}
		return true
	}
	charge := func(g muster.GateSpec, r muster.GateResult, why string) {
		fb = append(fb, fmt.Sprintf("Gate %q (%s) failed%s:\n%s", g.Name, g.Command, why, tail(r.Output, maxFeedback/2)))
		if failed == "" {
			failed = "gate " + g.Name + " failed: " + gateSummary(r)
		}
	}
	for _, g := range w.cfg.Gates {
		r := w.runGate(ctx, g)
		w.logGate(g, r, round)
		w.gateBlocked(g, r.Blocked)
		ev := muster.Event{Type: muster.EvGateRan, Gate: g.Name, Passed: &r.Passed, Output: tail(r.Output, maxGateOutput), Round: round}
		if changed(g) || r.Passed {
			w.send(ev)
			continue
		}
		env, hard := gateEnv(g, r, w.dir)
		if hard {
			w.send(ev)
			w.envFailed = env
			return "", env
		}
		charged, newly := w.judge(ctx, g, r, &ev, w.base, "the base commit", env)
		w.send(ev)
		if w.envFailed != "" {
			return "", w.envFailed
		}
		switch {
		case !charged:
		case len(newly) > 0:
			charge(g, r, " (newly failing: "+strings.Join(newly, ", ")+"; other failures were there before your change)")
		default:
			charge(g, r, "")
		}
	}
	for _, g := range taskGates {
		r := w.runGate(ctx, g)
		w.logGate(g, r, round)
		w.gateBlocked(g, r.Blocked)
		ev := muster.Event{Type: muster.EvGateRan, Gate: g.Name, Passed: &r.Passed, Output: tail(r.Output, maxGateOutput), Round: round}
		if !w.baselined[g.Name] {
			if w.baselined == nil {
				w.baselined = map[string]bool{}
			}
			w.baselined[g.Name] = true
			// Only for the warning: an acceptance test that already
			// passes before the change does not tell the change apart.
			if before, ok := w.d.gateAt(ctx, g, w.base, w.cfg); ok {
				ev.Baseline = verdict(before.Passed)
				if before.Passed {
					w.send(muster.Event{Type: muster.EvWarning, Gate: g.Name,
						Message: fmt.Sprintf("gate %s (%s) already passes on the base commit: it does not discriminate", g.Name, g.Command)})
				}
			}
		}
		w.send(ev)
		if why, _ := gateEnv(g, r, w.dir); why != "" {
			w.envFailed = why
			return "", why
		}
		if !changed(g) && !r.Passed {
			charge(g, r, "")
		}
	}
	return strings.Join(fb, "\n\n"), failed
}

// runGate runs a gate on the change in the worktree, or takes its result
// from where the agent ran (a fleet worker runs the gates in its clone).
func (w *worker) runGate(ctx context.Context, g muster.GateSpec) muster.GateResult {
	for _, r := range w.remoteGates {
		if r.Name == g.Name && r.Command == g.Command {
			w.d.gc.timed(g, r)
			return r
		}
	}
	r := w.d.opts.Gates.Run(ctx, w.dir, g, w.cfg.Run.GateTimeout)
	w.d.gc.timed(g, r)
	return r
}

// maxGateLog bounds the output of one gate run in the attempt log (muster
// logs --full prints it; the journal's GateRan keeps the last 4 KiB).
const maxGateLog = 64 << 10

// logGate records a gate's command, exit status, duration and output in
// the attempt log (the journal's GateRan has its verdict and output tail).
func (w *worker) logGate(g muster.GateSpec, r muster.GateResult, round int) {
	exit := r.ExitCode
	w.log(muster.LogRecord{Kind: muster.LogGate, Round: round, Gate: g.Name, Command: g.Command, Exit: &exit,
		DurationMS: r.Duration.Milliseconds(), Text: tail(r.Output, maxGateLog)})
}

// judge triages a failing plan-wide gate against its result on commit
// (the task's base, or the tip it lands on; where names it for the
// reason). It sets ev's Baseline and Reason, and returns whether the
// failure is the change's to fix and which tests newly fail. A gate
// whose result on commit cannot be known is charged. A gate that cannot
// run (env: its output names a missing program or package) is the
// change's only where it ran on commit; where it cannot run on commit
// either, or commit's result is unknown, nothing can be triaged:
// w.envFailed is set and the run stops.
func (w *worker) judge(ctx context.Context, g muster.GateSpec, r muster.GateResult, ev *muster.Event, commit, where, env string) (charged bool, newly []string) {
	before, ok := w.d.gateAt(ctx, g, commit, w.cfg)
	if why := w.d.gc.setupFailure(commit); why != "" {
		w.envFailed = why
		return false, nil
	}
	if !ok {
		if env != "" {
			w.envFailed = env
			return false, nil
		}
		return true, nil
	}
	ev.Baseline = verdict(before.Passed)
	if why, _ := gateEnv(g, before, ""); why != "" {
		w.envFailed = strings.Replace(why, "could not run", "could not run on "+where, 1)
		return false, nil
	}
	if env != "" {
		// It ran on commit: the change is what made it unable to run.
		ev.Reason = "could not run after the change (it ran on " + where + ")"
		return true, nil
	}
	charged, newly = triage(r, before)
	switch {
	case !charged:
		ev.NotCharged = true
		ev.Reason = muster.ReasonPreExisting + ": fails on " + where + " too; not charged"
	case len(newly) > 0:
		ev.Reason = "newly failing: " + strings.Join(newly, ", ")
	}
	return charged, newly
}

func (w *worker) taskGates() []muster.GateSpec {
	var out []muster.GateSpec
	for i, g := range w.task.Gates {
		out = append(out, muster.GateSpec{Name: fmt.Sprintf("%s/gate%d", w.task.ID, i+1), Command: g})
	}
	return out
}

func verdict(passed bool) string {
	if passed {
		return "pass"
	}
	return "fail"
}

// gateCache holds gate results per (gate, commit) and serialises the
// baseline worktree.
type gateCache struct {
	mu sync.Mutex // guards m and setup
	m  map[string]muster.GateResult
	// setup holds, per commit, why setup failed on it in the baseline
	// clone.
	setup map[string]string
	// took holds, per gate (name and command), how long its last run
	// took, wherever it ran: what the queue expects a run to take.
	took map[string]time.Duration
	wt   sync.Mutex // held while the baseline worktree is in use
}

func gateKey(g muster.GateSpec, commit string) string {
	return g.Name + "\x00" + g.Command + "\x00" + commit
}

func (c *gateCache) get(g muster.GateSpec, commit string) (muster.GateResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[gateKey(g, commit)]
	return r, ok
}

func (c *gateCache) put(g muster.GateSpec, commit string, r muster.GateResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]muster.GateResult{}
	}
	c.m[gateKey(g, commit)] = r
	c.timeLocked(g, r)
}

// timed records how long a run of g took.
func (c *gateCache) timed(g muster.GateSpec, r muster.GateResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeLocked(g, r)
}

func (c *gateCache) timeLocked(g muster.GateSpec, r muster.GateResult) {
	if r.Duration <= 0 {
		return
	}
	if c.took == nil {
		c.took = map[string]time.Duration{}
	}
	c.took[gateKey(g, "")] = r.Duration
}

// expected is how long a run of all of gates takes, by their last runs;
// 0 when one of them has not run yet.
func (c *gateCache) expected(gates []muster.GateSpec) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum time.Duration
	for _, g := range gates {
		d, ok := c.took[gateKey(g, "")]
		if !ok {
			return 0
		}
		sum += d
	}
	return sum
}

// gateAt returns the gate's result on commit, computed once per (gate,
// commit) in the baseline worktree. ok is false when it cannot be known
// (no checkout, or cancelled).
func (d *Driver) gateAt(ctx context.Context, g muster.GateSpec, commit string, cfg *muster.Config) (muster.GateResult, bool) {
	if commit == "" {
		return muster.GateResult{}, false
	}
	if r, ok := d.gc.get(g, commit); ok {
		return r, true
	}
	d.gc.wt.Lock()
	defer d.gc.wt.Unlock()
	if r, ok := d.gc.get(g, commit); ok {
		return r, true
	}
	dir, err := d.opts.Workspace.Checkout(ctx, baselineSlot, commit)
	if err != nil || ctx.Err() != nil {
		return muster.GateResult{}, false
	}
	if err := d.setupBase(ctx, dir, "commit "+short(commit)+" (the baseline clone)", cfg); err != nil {
		if env := classifyEnv(err, ""); env != nil && ctx.Err() == nil {
			d.gc.setupFailed(commit, env.cause)
		}
		return muster.GateResult{}, false
	}
	r := d.opts.Gates.Run(ctx, dir, g, cfg.Run.GateTimeout)
	if ctx.Err() != nil {
		return muster.GateResult{}, false
	}
	d.gc.put(g, commit, r)
	return r, true
}

func (c *gateCache) setupFailed(commit, why string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.setup == nil {
		c.setup = map[string]string{}
	}
	c.setup[commit] = why
}

func (c *gateCache) setupFailure(commit string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setup[commit]
}

func short(commit string) string {
	if len(commit) > 10 {
		return commit[:10]
	}
	return commit
}

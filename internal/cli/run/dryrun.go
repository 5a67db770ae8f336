package run

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/planfile"
)

// Past is what earlier runs of a repository tell about a task: the
// averages over the tasks that succeeded in them.
type Past struct {
	Runs, Tasks int
	// CostMicros and Duration are the average cost and active time of a
	// succeeded task.
	CostMicros int64
	Duration   time.Duration
}

// PastRuns averages the succeeded tasks of the repository's runs.
func PastRuns(repo *cmdutil.Repo) Past {
	var p Past
	infos, err := repo.Runs()
	if err != nil {
		return p
	}
	var cost int64
	var dur time.Duration
	for _, info := range infos {
		events, err := repo.ReadRun(info.ID)
		if err != nil {
			continue
		}
		st, err := engine.Replay(events)
		if err != nil {
			continue
		}
		n := 0
		for _, t := range st.Tasks {
			if t.State != muster.StateSucceeded || t.Attempts == 0 {
				continue // a [x] task, or one found done on resume
			}
			n++
			cost += t.Usage.CostMicros
			dur += st.Active(t.Started, t.Ended)
		}
		if n > 0 {
			p.Runs++
			p.Tasks += n
		}
	}
	if p.Tasks > 0 {
		p.CostMicros = cost / int64(p.Tasks)
		p.Duration = dur / time.Duration(p.Tasks)
	}
	return p
}

// Step is one moment of a simulated schedule: the tasks that start then,
// each on its clone.
type Step struct {
	At     time.Duration // since the run's start
	Starts []Placement
}

// Placement is a task on a clone.
type Placement struct {
	Task muster.TaskID
	Slot string
}

// Schedule simulates the plan with the pure engine, as the driver would
// run it if every task succeeded and took d: which tasks start together,
// on which clones. Tasks the engine would skip or cancel are listed in
// left with why.
func Schedule(plan *muster.Plan, cfg *muster.Config, d time.Duration) (steps []Step, end time.Duration, left []string) {
	if d <= 0 {
		d = time.Minute
	}
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	st := engine.NewState()
	seq := int64(0)
	apply := func(e muster.Event, at time.Time) {
		seq++
		e.Seq, e.Time = seq, at
		_ = st.Apply(&e) // the engine's own decisions: they apply
	}
	apply(muster.Event{Type: muster.EvRunStarted, Run: "dry-run", Config: cfg}, t0)
	apply(muster.Event{Type: muster.EvTasksPlanned, Tasks: plan.Tasks}, t0)
	type running struct {
		task muster.TaskID
		a    engine.Action
		end  time.Time
	}
	var busy []running
	now := t0
	for i := 0; i < 10*len(plan.Tasks)+100; i++ {
		dec := engine.Decide(st, engine.Input{Now: now})
		var step Step
		finished := false
		for _, a := range dec.Actions {
			switch a.Kind {
			case engine.ActStart:
				for _, e := range startEvents(a) {
					apply(e, now)
				}
				busy = append(busy, running{task: a.Task, a: a, end: now.Add(d)})
				step.Starts = append(step.Starts, placements(a)...)
			case engine.ActSkip:
				apply(muster.Event{Type: muster.EvTaskSkipped, Task: a.Task, Reason: a.Reason}, now)
				left = append(left, fmt.Sprintf("%s: %s", a.Task, a.Reason))
			case engine.ActCancel:
				apply(muster.Event{Type: muster.EvTaskCancelled, Task: a.Task, Reason: a.Reason}, now)
				left = append(left, fmt.Sprintf("%s: %s", a.Task, a.Reason))
			case engine.ActFinish:
				finished = true
			}
		}
		if len(step.Starts) > 0 {
			step.At = now.Sub(t0)
			steps = append(steps, step)
		}
		if finished {
			break
		}
		if len(dec.Actions) > 0 {
			continue
		}
		if len(busy) == 0 {
			break // nothing runs and nothing starts: the engine would say why
		}
		// The next task to end ends; its clone comes free.
		sort.SliceStable(busy, func(i, j int) bool { return busy[i].end.Before(busy[j].end) })
		b := busy[0]
		busy = busy[1:]
		now = b.end
		apply(muster.Event{Type: muster.EvTaskSucceeded, Task: b.task, Attempt: b.a.Attempt}, now)
		for _, p := range leased(b.a) {
			apply(muster.Event{Type: muster.EvExecutorRelease, Task: b.task, Executor: p.Executor, Clone: p.Clone, Role: b.a.Role}, now)
		}
	}
	return steps, now.Sub(t0), left
}

// DryRun validates a plan as run does, shows the schedule the engine
// would follow and the expected cost, and spends nothing: no agent runs,
// no run branch, no journal.
func DryRun(ctx context.Context, io *cmdutil.IOStreams, planPath string, f *preflight.Flags) error {
	repo, err := cmdutil.OpenRepo(ctx, f.Repo)
	if err != nil {
		return err
	}
	cfg, err := preflight.LoadConfig(repo, f)
	if err != nil {
		return err
	}
	plan, probs, err := planfile.Check(planPath, cfg, planfile.Options{Strict: f.Strict})
	if err != nil {
		return err
	}
	if err := preflight.NoCrew(plan, cfg); err != nil {
		return err
	}
	if err := preflight.CheckCommands(ctx, repo.Top, cfg); err != nil {
		return err
	}
	probs = append(probs, preflight.Unapproved(plan, cfg)...)
	preflight.PrintProblems(io.ErrOut, probs)
	if len(probs.Errors()) > 0 {
		return &cmdutil.Silent{Err: probs.Errors()}
	}
	past := PastRuns(repo)
	out := io.Out
	if f.JSON {
		// stdout is the journal's events as JSON lines (ARCHITECTURE.md
		// §2.1), and a dry run has none: the text is people's, stderr's.
		out = io.ErrOut
	}
	writeDryRun(out, plan, cfg, past)
	return nil
}

func writeDryRun(w io.Writer, plan *muster.Plan, cfg *muster.Config, past Past) {
	todo := 0
	for _, t := range plan.Tasks {
		if !t.Done {
			todo++
		}
	}
	steps, end, left := Schedule(plan, cfg, past.Duration)
	fmt.Fprintf(w, "dry run of %s: %d tasks to run (%d already done); nothing is spent, no run branch is made\n\n",
		textsafe.Sanitize(plan.Source), todo, len(plan.Tasks)-todo)
	unit := "each task taking the same time"
	if past.Duration > 0 {
		unit = fmt.Sprintf("each task taking %s, the average of %d tasks in %d past runs", roundDur(past.Duration), past.Tasks, past.Runs)
	}
	fmt.Fprintf(w, "schedule (simulated by the scheduler, every task succeeding, %s):\n", unit)
	for i, s := range steps {
		var on []string
		for _, p := range s.Starts {
			on = append(on, fmt.Sprintf("%s on %s", textsafe.Sanitize(string(p.Task)), textsafe.Sanitize(p.Slot)))
		}
		when := fmt.Sprintf("step %d", i+1)
		if past.Duration > 0 {
			when += " at +" + roundDur(s.At).String()
		}
		fmt.Fprintf(w, "  %-18s %s\n", when, strings.Join(on, ", "))
	}
	for _, l := range left {
		fmt.Fprintf(w, "  not run            %s\n", textsafe.Sanitize(l))
	}
	if past.Duration > 0 {
		fmt.Fprintf(w, "  expected wall time about %s\n", roundDur(end))
	}
	// Cost: a task's own budget, else the average of past runs.
	var sum int64
	budgeted, averaged, unknown, raced := 0, 0, 0, 0
	for _, t := range plan.Tasks {
		attempts := int64(1) // a race's N candidates are N attempts
		if n, _ := engine.RaceOf(t, cfg); n > 0 && !t.Done {
			attempts = int64(n)
			raced++
		}
		switch {
		case t.Done:
		case t.Budget.USDMicros > 0:
			sum += t.Budget.USDMicros * attempts
			budgeted++
		case past.Tasks > 0:
			sum += past.CostMicros * attempts
			averaged++
		default:
			unknown++
		}
	}
	fmt.Fprintln(w)
	var how []string
	if budgeted > 0 {
		how = append(how, fmt.Sprintf("%d at their Budget", budgeted))
	}
	if averaged > 0 {
		how = append(how, fmt.Sprintf("%d at %s, the average task of %d past runs", averaged, muster.FormatUSD(past.CostMicros), past.Runs))
	}
	if unknown > 0 {
		how = append(how, fmt.Sprintf("%d unknown (no past runs here, no Budget)", unknown))
	}
	if raced > 0 {
		how = append(how, fmt.Sprintf("%d raced, each counted once per candidate", raced))
	}
	if len(how) == 0 {
		how = []string{"nothing to run"}
	}
	fmt.Fprintf(w, "expected cost %s (%s)\n", muster.FormatUSD(sum), strings.Join(how, "; "))
	if b := cfg.Run.BudgetUSDMicros; b > 0 {
		fmt.Fprintf(w, "run budget    %s: the run starts no task the budget cannot cover\n", muster.FormatUSD(b))
	}
	fmt.Fprintf(w, "\nto run it: muster run %s\n", textsafe.Sanitize(plan.Source))
}

// startEvents are the events that start an action's attempt (a race's:
// a lease per candidate, the race, the task's start), as the driver
// journals them.
func startEvents(a engine.Action) []muster.Event {
	var evs []muster.Event
	for _, p := range leased(a) {
		evs = append(evs, muster.Event{Type: muster.EvExecutorLeased, Task: a.Task, Executor: p.Executor, Clone: p.Clone, Role: a.Role})
	}
	if a.Racing() {
		evs = append(evs, muster.Event{Type: muster.EvRaceStarted, Task: a.Task, Race: a.Race})
	}
	return append(evs, muster.Event{Type: muster.EvTaskStarted, Task: a.Task, Attempt: a.Attempt, Executor: a.Executor, Clone: a.Clone, Role: a.Role})
}

// leased are the clones an action leases: a race's candidates, or its one.
func leased(a engine.Action) []muster.RaceCandidate {
	if a.Racing() {
		return a.Race
	}
	return []muster.RaceCandidate{{Executor: a.Executor, Clone: a.Clone}}
}

func placements(a engine.Action) []Placement {
	var out []Placement
	for _, p := range leased(a) {
		out = append(out, Placement{Task: a.Task, Slot: p.Slot()})
	}
	return out
}

// roundDur rounds a duration for people: tenths of a second under a
// minute, else seconds.
func roundDur(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

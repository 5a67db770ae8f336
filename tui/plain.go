package tui

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/runview"
)

// Printer writes plain progress lines, one per change of a run that
// people need to see, in the manner of a build tool: the time since the
// run started, the [finished/total] count once the plan is known, and
// what happened:
//
//	2.1s [1/3] ✓ api done in 2.0s commit 1b9001878c
//
// It is the one plain view: muster run --plain (and run when the live
// view is off or left with q), muster watch --plain, and the live view's
// scrolling tail print its lines. Untrusted text is sanitized; colour
// only when Color is set.
type Printer struct {
	w io.Writer
	f plainFold
	// Color marks the lines with ANSI colours (a terminal, NO_COLOR unset).
	Color bool
	// Verbose also prints tool uses and the gates that pass.
	Verbose bool
}

// NewPrinter returns a Printer writing to w.
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w, f: newPlainFold()} }

// Fold takes e into the printer's count and clock without printing it:
// the events a resume replays, or those the live view shows meanwhile.
func (p *Printer) Fold(e muster.Event) { p.f.apply(&e) }

// Print folds e and writes its line, if it has one.
func (p *Printer) Print(e muster.Event) error {
	p.f.apply(&e)
	line := p.f.format(&e, p.Color, p.Verbose)
	if line == "" {
		return nil // most events (messages, usage, leases) print nothing
	}
	_, err := io.WriteString(p.w, line+"\n")
	return err
}

// plainFold is what the lines need of a run: its ID and start, each
// task's state (for the count) and latest attempt's start (for "done in").
type plainFold struct {
	run     string
	start   time.Time // the run's start: the clock's zero
	tasks   map[muster.TaskID]muster.TaskState
	started map[muster.TaskID]time.Time
	// gaps are the stretches no muster process ran the run: the clock
	// leaves them out.
	gaps muster.GapTracker
	// remote is, by the orchestrator's slot (remote#1), where a fleet
	// worker runs its invocation (w1/remote#2): docs/fleet.md's name.
	remote map[string]string
	// racing holds the tasks whose race is under way: their TaskStarted
	// says nothing the RaceStarted line did not.
	racing map[muster.TaskID]bool
}

func newPlainFold() plainFold {
	return plainFold{tasks: map[muster.TaskID]muster.TaskState{}, started: map[muster.TaskID]time.Time{}, remote: map[string]string{},
		racing: map[muster.TaskID]bool{}}
}

// who names the clone of e: the fleet worker's worker/executor#clone
// while one holds the slot, else the slot.
func (f *plainFold) who(e *muster.Event) string {
	if w := f.remote[e.Slot()]; w != "" {
		return w
	}
	return e.Slot()
}

// apply folds e as the engine does for the states the count reads.
func (f *plainFold) apply(e *muster.Event) {
	f.gaps.Add(e)
	switch e.Type {
	case muster.EvRunStarted:
		f.run = e.Run
		if f.start.IsZero() {
			f.start = e.Time
		}
	case muster.EvRunResumed:
		for id, st := range f.tasks {
			if st != muster.StateSucceeded && st != muster.StateRunning {
				f.tasks[id] = muster.StatePending
			}
		}
	case muster.EvTasksPlanned, muster.EvPlanAdopted:
		for _, t := range e.Tasks {
			if _, ok := f.tasks[t.ID]; ok {
				continue
			}
			f.tasks[t.ID] = muster.StatePending
			if t.Done {
				f.tasks[t.ID] = muster.StateSucceeded
			}
		}
	case muster.EvWorkerAssigned:
		f.remote[e.Slot()] = e.Worker + "/" + muster.Slot(e.Executor, e.WorkerClone)
	case muster.EvExecutorRelease:
		delete(f.remote, e.Slot())
	case muster.EvTaskReopened:
		if _, ok := f.tasks[e.Task]; ok {
			f.tasks[e.Task] = muster.StatePending
		}
	case muster.EvTaskStarted:
		f.tasks[e.Task] = muster.StateRunning
		f.started[e.Task] = e.Time
	case muster.EvRaceStarted:
		f.racing[e.Task] = true
	case muster.EvTaskSucceeded, muster.EvTaskFailed, muster.EvTaskSkipped, muster.EvTaskCancelled:
		delete(f.racing, e.Task)
		if _, ok := f.tasks[e.Task]; ok {
			f.tasks[e.Task] = runview.EndState(e)
		}
	}
	if f.start.IsZero() {
		f.start = e.Time // a stream that does not begin at RunStarted
	}
}

// finished counts the tasks that are done for good: succeeded, failed or
// skipped. A cancelled task is not (resume runs it again), so an
// interrupt does not push the count up for a resume to pull it back.
func (f *plainFold) finished() int {
	n := 0
	for _, st := range f.tasks {
		if st == muster.StateSucceeded || st == muster.StateFailed || st == muster.StateSkipped {
			n++
		}
	}
	return n
}

// format is e's whole line, prefix and all, once e is folded; "" for an
// event people need not see one by one.
func (f *plainFold) format(e *muster.Event, color, verbose bool) string {
	line := f.line(e, color, verbose)
	if line == "" {
		return ""
	}
	return f.c(color, dim, f.prefix(e)) + " " + line
}

// prefix is the line's clock (the time a muster process ran the run
// since it started: not the stretches between a stop and the resume)
// and count.
func (f *plainFold) prefix(e *muster.Event) string {
	prefix := fmt.Sprintf("%7s", plainDur(muster.Active(f.gaps.Gaps, f.start, e.Time)))
	if len(f.tasks) > 0 {
		prefix += fmt.Sprintf(" [%d/%d]", f.finished(), len(f.tasks))
	}
	return prefix
}

const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	dim    = "\x1b[2m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

func (f *plainFold) c(color bool, code, s string) string {
	if !color {
		return s
	}
	return code + s + reset
}

// line is e's line without the prefix, "" for an event people need not
// see one by one.
func (f *plainFold) line(e *muster.Event, color, verbose bool) string {
	c := func(code, s string) string { return f.c(color, code, s) }
	task := textsafe.Sanitize(string(e.Task))
	switch e.Type {
	case muster.EvRunStarted:
		return fmt.Sprintf("run %s on branch %s (base %s)", e.Run, e.Branch, textsafe.Short(e.Base))
	case muster.EvRunResumed:
		if e.Cause == muster.CausePR {
			return "resumed: the pull request's feedback goes back to its tasks"
		}
		return "resumed: unfinished tasks run again"
	case muster.EvTaskStarted:
		if f.racing[e.Task] {
			return "" // the race's line said where it runs
		}
		a := ""
		if e.Attempt > 1 {
			a = fmt.Sprintf(" (attempt %d)", e.Attempt)
		}
		return fmt.Sprintf("%s %s started on %s%s", c(bold, "▶"), task, textsafe.Sanitize(e.Slot()), a)
	case muster.EvWorkerAssigned:
		if e.Role == muster.RoleReviewer {
			return ""
		}
		return fmt.Sprintf("  %s %s taken by fleet worker %s", c(dim, "⇢"), task, textsafe.Sanitize(e.Worker+"/"+muster.Slot(e.Executor, e.WorkerClone)))
	case muster.EvTaskSucceeded:
		extra := ""
		if e.Commit != "" {
			extra = " commit " + textsafe.Short(e.Commit)
		} else if e.Reason != "" {
			extra = " (" + textsafe.Sanitize(e.Reason) + ")"
		}
		took := ""
		if t := f.started[e.Task]; !t.IsZero() {
			took = " in " + plainDur(e.Time.Sub(t))
		}
		return fmt.Sprintf("%s %s done%s%s", c(green, "✓"), task, took, extra)
	case muster.EvTaskFailed:
		retry := ""
		if e.Retry {
			retry = " (will retry)"
		}
		return fmt.Sprintf("%s %s failed%s: %s", c(red, "✗"), task, retry, textsafe.Sanitize(e.Reason))
	case muster.EvTaskSkipped:
		return fmt.Sprintf("%s %s skipped: %s", c(yellow, "-"), task, textsafe.Sanitize(e.Reason))
	case muster.EvTaskCancelled:
		return fmt.Sprintf("%s %s cancelled: %s", c(yellow, "■"), task, textsafe.Sanitize(e.Reason))
	case muster.EvIntegrating:
		if len(e.Chain) > 1 {
			ids := make([]string, len(e.Chain))
			for i, l := range e.Chain {
				ids[i] = textsafe.Sanitize(string(l.Task))
			}
			return fmt.Sprintf("  batch of %d lands on the run branch: %s", len(e.Chain), strings.Join(ids, ", "))
		}
	case muster.EvRaceStarted, muster.EvCandidateFinished, muster.EvRaceWon:
		return f.raceLine(e, color)
	default:
		return f.qualityLine(e, color, verbose)
	}
	return ""
}

// qualityLine is line for what checks a change (gates, reviews, loops,
// violations) and what the crew and the run report on the way.
func (f *plainFold) qualityLine(e *muster.Event, color, verbose bool) string {
	c := func(code, s string) string { return f.c(color, code, s) }
	task := textsafe.Sanitize(string(e.Task))
	switch e.Type {
	case muster.EvFixRound:
		if e.Round > 0 {
			return fmt.Sprintf("%s %s fix round %d: %s", c(yellow, "↻"), task, e.Round, textsafe.Sanitize(e.Reason))
		}
		return fmt.Sprintf("%s %s re-runs on the new tip: %s", c(yellow, "↻"), task, textsafe.Sanitize(e.Reason))
	case muster.EvGateRan:
		if e.Passed != nil && !*e.Passed {
			why := ""
			if e.Uncharged() {
				why = " (pre-existing: it fails on the base too; not charged)"
			} else if e.Phase == "integration" {
				why = " on the integrated tree"
			}
			return fmt.Sprintf("%s %s gate %s failed%s", c(yellow, "!"), task, textsafe.Sanitize(e.Gate), why)
		} else if verbose {
			return fmt.Sprintf("  %s gate %s passed", task, textsafe.Sanitize(e.Gate))
		}
	case muster.EvReviewed:
		if len(e.Findings) > 0 {
			return fmt.Sprintf("  %s reviewed by %s: %d findings (%d blocking)", task, textsafe.Sanitize(f.who(e)), len(e.Findings), runview.Blocking(e.Findings))
		}
		return fmt.Sprintf("  %s approved by %s", task, textsafe.Sanitize(f.who(e)))
	case muster.EvViolation:
		if e.Reason == muster.ReasonTampered {
			return fmt.Sprintf("%s %s: your repository changed while it ran: %s", c(yellow, "!"), task, textsafe.Sanitize(strings.Join(e.Paths, "; ")))
		}
		where := "outside Owns"
		if e.Reason != "" {
			where = "with " + textsafe.Sanitize(e.Reason)
		}
		return fmt.Sprintf("%s %s changed paths %s: %s", c(yellow, "!"), task, where, textsafe.Sanitize(strings.Join(e.Paths, ", ")))
	case muster.EvLoopAttempt:
		if e.Passed != nil && *e.Passed {
			return fmt.Sprintf("  %s check %d passed", task, e.Round)
		}
		return fmt.Sprintf("%s %s check %d failed", c(yellow, "!"), task, e.Round)
	case muster.EvLoopEnded:
		return fmt.Sprintf("  %s loop %s after %d checks %s", task, e.State, e.Round, textsafe.Sanitize(e.Reason))
	case muster.EvTasksPlanned:
		if e.Task != "" {
			return fmt.Sprintf("  %s delegated %d new tasks", task, len(e.Tasks))
		}
	case muster.EvRateLimited:
		return fmt.Sprintf("%s %s rate limited on %s: the crew slows down; retried, not charged", c(yellow, "!"), task, textsafe.Sanitize(e.Executor))
	case muster.EvExecutorPaused:
		if e.Until != nil {
			return fmt.Sprintf("%s executor %s paused until %s (%s): others keep going", c(yellow, "!"),
				textsafe.Sanitize(e.Executor), e.Until.Local().Format("15:04:05"), textsafe.Sanitize(e.Reason))
		}
	case muster.EvTaskReopened:
		return fmt.Sprintf("%s %s follow-up %d: feedback from the pull request", c(bold, "↺"), task, e.Followup)
	case muster.EvPlanAdopted:
		return fmt.Sprintf("%s plan %s adopted: %s", c(bold, "↺"), textsafe.Sanitize(e.Plan), textsafe.Sanitize(e.Message))
	case muster.EvExecutorJoined:
		return joinedLine(e, c)
	case muster.EvBlocked:
		return fmt.Sprintf("%s %s network blocked on %s: %s", c(yellow, "!"), task, textsafe.Sanitize(e.Slot()), textsafe.Sanitize(e.BlockedText()))
	case muster.EvRefused:
		return fmt.Sprintf("%s %s refused a fleet report from %s on %s: %s", c(yellow, "!"), task, textsafe.Sanitize(e.Worker), textsafe.Sanitize(e.Subject), textsafe.Sanitize(e.Reason))
	case muster.EvWarning:
		return c(yellow, "warning: ") + textsafe.Sanitize(e.Message)
	case muster.EvToolUse:
		if verbose {
			return fmt.Sprintf("  %s %s %s", task, textsafe.Sanitize(e.Tool), textsafe.Sanitize(e.Args))
		}
	case muster.EvRunFinished:
		return fmt.Sprintf("run %s", e.State)
	case muster.EvRunInterrupted:
		return c(yellow, "interrupted: ") + "resume with muster resume " + f.run
	}
	return ""
}

// joinedLine is an ExecutorJoined's line: the executor, the worker that
// brought it and its clones.
func joinedLine(e *muster.Event, c func(code, s string) string) string {
	if e.Spec == nil {
		return ""
	}
	clones := "1 clone"
	if e.Spec.Clones != 1 {
		clones = fmt.Sprintf("%d clones", e.Spec.Clones)
	}
	return fmt.Sprintf("%s executor %s joined the crew from fleet worker %s (%s)", c(bold, "+"), textsafe.Sanitize(e.Executor), textsafe.Sanitize(e.Worker), clones)
}

// plainDur is a duration in the clock's format: 4.2s, 3m07s, 1h02m.
func plainDur(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	if d < time.Hour {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

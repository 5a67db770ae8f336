// Package progress prints one line per change of a run, for people: a
// task started on a clone, finished in so long, failed and why. Colour
// only on a terminal, honouring NO_COLOR.
package progress

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/runview"
)

// Printer prints progress lines.
type Printer struct {
	w     io.Writer
	color bool
	start time.Time
	// Verbose also prints tool uses and gate runs.
	Verbose bool
}

// New returns a printer writing to w.
func New(w io.Writer, color bool) *Printer { return &Printer{w: w, color: color} }

const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	dim    = "\x1b[2m"
	bold   = "\x1b[1m"
	reset  = "\x1b[0m"
)

func (p *Printer) c(code, s string) string {
	if !p.color {
		return s
	}
	return code + s + reset
}

// OnEvent prints the line for an event, if it has one.
func (p *Printer) OnEvent(e *muster.Event, s *engine.State) {
	if p.start.IsZero() {
		p.start = s.Start
		if p.start.IsZero() {
			p.start = e.Time
		}
	}
	line := ""
	task := textsafe.Sanitize(string(e.Task))
	switch e.Type {
	case muster.EvRunStarted:
		line = fmt.Sprintf("run %s on branch %s (base %s)", e.Run, e.Branch, textsafe.Short(e.Base))
	case muster.EvRunResumed:
		line = "resumed: unfinished tasks run again"
		if e.Cause == muster.CausePR {
			line = "resumed: the pull request's feedback goes back to its tasks"
		}
	case muster.EvTaskReopened:
		line = fmt.Sprintf("↺ %s follow-up %d: feedback from the pull request", task, e.Followup)
	case muster.EvTaskStarted:
		a := ""
		if e.Attempt > 1 {
			a = fmt.Sprintf(" (attempt %d)", e.Attempt)
		}
		line = fmt.Sprintf("%s %s started on %s%s", p.c(bold, "▶"), task, textsafe.Sanitize(e.Slot()), a)
	case muster.EvWorkerAssigned:
		if e.Role == muster.RoleReviewer {
			return
		}
		line = fmt.Sprintf("  %s %s taken by fleet worker %s", p.c(dim, "⇢"), task, textsafe.Sanitize(e.Worker+"/"+muster.Slot(e.Executor, e.WorkerClone)))
	case muster.EvTaskSucceeded:
		t := s.Tasks[e.Task]
		extra := ""
		if e.Commit != "" {
			extra = " commit " + textsafe.Short(e.Commit)
		} else if e.Reason != "" {
			extra = " (" + textsafe.Sanitize(e.Reason) + ")"
		}
		took := ""
		if t != nil && !t.Started.IsZero() {
			took = " in " + fmtDur(e.Time.Sub(t.Started))
		}
		line = fmt.Sprintf("%s %s done%s%s", p.c(green, "✓"), task, took, extra)
	case muster.EvTaskFailed:
		retry := ""
		if e.Retry {
			retry = " (will retry)"
		}
		line = fmt.Sprintf("%s %s failed%s: %s", p.c(red, "✗"), task, retry, textsafe.Sanitize(e.Reason))
	case muster.EvTaskSkipped:
		line = fmt.Sprintf("%s %s skipped: %s", p.c(yellow, "-"), task, textsafe.Sanitize(e.Reason))
	case muster.EvTaskCancelled:
		line = fmt.Sprintf("%s %s cancelled: %s", p.c(yellow, "■"), task, textsafe.Sanitize(e.Reason))
	case muster.EvFixRound:
		if e.Round > 0 {
			line = fmt.Sprintf("%s %s fix round %d: %s", p.c(yellow, "↻"), task, e.Round, textsafe.Sanitize(e.Reason))
		} else {
			line = fmt.Sprintf("%s %s re-runs on the new tip: %s", p.c(yellow, "↻"), task, textsafe.Sanitize(e.Reason))
		}
	case muster.EvGateRan:
		if e.Passed != nil && !*e.Passed {
			why := ""
			if e.NotCharged() {
				why = " (pre-existing: it fails on the base too; not charged)"
			} else if e.Phase == "integration" {
				why = " on the integrated tree"
			}
			line = fmt.Sprintf("%s %s gate %s failed%s", p.c(yellow, "!"), task, textsafe.Sanitize(e.Gate), why)
		} else if p.Verbose {
			line = fmt.Sprintf("  %s gate %s passed", task, textsafe.Sanitize(e.Gate))
		}
	case muster.EvReviewed:
		if len(e.Findings) > 0 {
			line = fmt.Sprintf("  %s reviewed by %s: %d findings (%d blocking)", task, e.Slot(), len(e.Findings), runview.Blocking(e.Findings))
		} else {
			line = fmt.Sprintf("  %s approved by %s", task, e.Slot())
		}
	case muster.EvViolation:
		if e.Reason == muster.ReasonTampered {
			line = fmt.Sprintf("%s %s: your repository changed while it ran: %s", p.c(yellow, "!"), task, textsafe.Sanitize(strings.Join(e.Paths, "; ")))
			break
		}
		where := "outside Owns"
		if e.Reason != "" {
			where = "with " + textsafe.Sanitize(e.Reason)
		}
		line = fmt.Sprintf("%s %s changed paths %s: %s", p.c(yellow, "!"), task, where, textsafe.Sanitize(strings.Join(e.Paths, ", ")))
	case muster.EvLoopAttempt:
		if e.Passed != nil && *e.Passed {
			line = fmt.Sprintf("  %s check %d passed", task, e.Round)
		} else {
			line = fmt.Sprintf("%s %s check %d failed", p.c(yellow, "!"), task, e.Round)
		}
	case muster.EvLoopEnded:
		line = fmt.Sprintf("  %s loop %s after %d checks %s", task, e.State, e.Round, textsafe.Sanitize(e.Reason))
	case muster.EvTasksPlanned:
		if e.Task != "" {
			line = fmt.Sprintf("  %s delegated %d new tasks", task, len(e.Tasks))
		}
	case muster.EvRateLimited:
		line = fmt.Sprintf("%s %s rate limited on %s: the crew slows down; retried, not charged", p.c(yellow, "!"), task, textsafe.Sanitize(e.Executor))
	case muster.EvExecutorPaused:
		if e.Until != nil {
			line = fmt.Sprintf("%s executor %s paused until %s (%s): others keep going", p.c(yellow, "!"),
				textsafe.Sanitize(e.Executor), e.Until.Local().Format("15:04:05"), textsafe.Sanitize(e.Reason))
		}
	case muster.EvWarning:
		line = p.c(yellow, "warning: ") + textsafe.Sanitize(e.Message)
	case muster.EvToolUse:
		if p.Verbose {
			line = fmt.Sprintf("  %s %s %s", task, textsafe.Sanitize(e.Tool), textsafe.Sanitize(e.Args))
		}
	case muster.EvRunFinished:
		line = fmt.Sprintf("run %s", e.State)
	case muster.EvRunInterrupted:
		line = p.c(yellow, "interrupted: ") + "resume with muster resume " + s.Run
	}
	if line == "" {
		return // most events (messages, tool uses, usage) print nothing
	}
	prefix := fmt.Sprintf("%7s", fmtDur(e.Time.Sub(p.start)))
	if len(s.Tasks) > 0 {
		prefix += fmt.Sprintf(" [%d/%d]", Finished(s), len(s.Tasks))
	}
	fmt.Fprintf(p.w, "%s %s\n", p.c(dim, prefix), line)
}

// Finished counts the tasks that are done for good: succeeded, failed or
// skipped. A cancelled task is not (resume runs it again), so an
// interrupt does not push the count up for a resume to pull it back.
func Finished(s *engine.State) int {
	c := s.Counts()
	return c[muster.StateSucceeded] + c[muster.StateFailed] + c[muster.StateSkipped]
}

func fmtDur(d time.Duration) string {
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

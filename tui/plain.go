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

// PlainLine formats one event as a short line for people, without the
// time: "api: gates passed (test)". Untrusted text is sanitized. Events
// that people need not see one by one (tokens, leases, messages) give "".
func PlainLine(e muster.Event) string {
	id := textsafe.Sanitize(string(e.Task))
	switch e.Type {
	case muster.EvRunStarted:
		return fmt.Sprintf("run %s started on %s", textsafe.Sanitize(e.Run), textsafe.Sanitize(e.Branch))
	case muster.EvRunResumed:
		return "run resumed" + suffix(e.Message)
	case muster.EvTasksPlanned:
		if e.Task != "" {
			return fmt.Sprintf("%s: delegated %d tasks", id, len(e.Tasks))
		}
		return fmt.Sprintf("planned %d tasks", len(e.Tasks))
	case muster.EvTaskStarted:
		s := fmt.Sprintf("%s: started on %s", id, textsafe.Sanitize(e.Slot()))
		if e.Attempt > 1 {
			s += fmt.Sprintf(" (attempt %d)", e.Attempt)
		}
		return s
	case muster.EvWorkerAssigned:
		if e.Role == muster.RoleReviewer {
			return ""
		}
		return fmt.Sprintf("%s: taken by fleet worker %s", id, textsafe.Sanitize(e.Worker+"/"+muster.Slot(e.Executor, e.WorkerClone)))
	case muster.EvRefused:
		return fmt.Sprintf("%s: refused a fleet report from %s on %s: %s", id, textsafe.Sanitize(e.Worker), textsafe.Sanitize(e.Subject), textsafe.Sanitize(e.Reason))
	case muster.EvPhase:
		switch e.Phase {
		case "agent":
			return "" // the start line says it
		case "review":
			if e.Round == 0 {
				return id + ": review"
			}
			return fmt.Sprintf("%s: review round %d", id, e.Round)
		}
		return fmt.Sprintf("%s: %s", id, textsafe.Sanitize(e.Phase))
	case muster.EvToolUse:
		return fmt.Sprintf("%s: tool %s %s", id, textsafe.Sanitize(e.Tool), textsafe.Sanitize(e.Args))
	case muster.EvGateRan:
		res := "failed"
		if e.Passed != nil && *e.Passed {
			res = "passed"
		} else if e.NotCharged() {
			res = "failed (pre-existing, not charged)"
		} else if e.Phase == "integration" {
			res = "failed on the integrated tree"
		}
		return fmt.Sprintf("%s: gate %s %s", id, textsafe.Sanitize(e.Gate), res)
	case muster.EvRateLimited:
		return fmt.Sprintf("%s: rate limited on %s; the crew slows down, the attempt is retried (not charged)%s", id, textsafe.Sanitize(e.Executor), suffix(e.Reason))
	case muster.EvBlocked:
		return fmt.Sprintf("%s: %s: network: %s", id, textsafe.Sanitize(e.Slot()), textsafe.Sanitize(e.BlockedText()))
	case muster.EvExecutorPaused:
		if e.Until == nil {
			return ""
		}
		return fmt.Sprintf("executor %s paused until %s%s", textsafe.Sanitize(e.Executor), e.Until.UTC().Format(time.RFC3339), suffix(e.Reason))
	case muster.EvLoopAttempt:
		res := "failed"
		if e.Passed != nil && *e.Passed {
			res = "passed"
		}
		return fmt.Sprintf("%s: check %d %s", id, e.Round, res)
	case muster.EvLoopEnded:
		return fmt.Sprintf("%s: loop %s after %d checks%s", id, textsafe.Sanitize(e.State), e.Round, suffix(e.Reason))
	case muster.EvReviewed:
		if len(e.Findings) == 0 {
			return fmt.Sprintf("%s: review by %s approved", id, textsafe.Sanitize(e.Slot()))
		}
		return fmt.Sprintf("%s: review by %s: %d findings (%d blocking)", id, textsafe.Sanitize(e.Slot()), len(e.Findings), runview.Blocking(e.Findings))
	case muster.EvFixRound:
		return fmt.Sprintf("%s: fix round %d%s", id, e.Round, suffix(e.Reason))
	case muster.EvViolation:
		if e.Reason == muster.ReasonTampered {
			return fmt.Sprintf("%s: %s", id, textsafe.Sanitize(strings.Join(e.Paths, "; ")))
		}
		return fmt.Sprintf("%s: outside owns: %s", id, textsafe.Sanitize(strings.Join(e.Paths, ", ")))
	case muster.EvCommitted:
		return fmt.Sprintf("%s: committed %s", id, textsafe.Short(e.Commit))
	case muster.EvIntegrated:
		return fmt.Sprintf("%s: integrated %s", id, textsafe.Short(e.Commit))
	case muster.EvTaskSucceeded:
		if e.Commit == "" && e.Reason != "" {
			return fmt.Sprintf("%s: succeeded (%s)", id, textsafe.Sanitize(e.Reason))
		}
		return fmt.Sprintf("%s: succeeded %s", id, textsafe.Short(e.Commit))
	case muster.EvTaskFailed:
		if e.Retry {
			return fmt.Sprintf("%s: attempt %d failed, will retry%s", id, e.Attempt, suffix(e.Reason))
		}
		return fmt.Sprintf("%s: FAILED%s", id, suffix(e.Reason))
	case muster.EvTaskReopened:
		return fmt.Sprintf("%s: follow-up %d from the pull request", id, e.Followup)
	case muster.EvTaskSkipped:
		return fmt.Sprintf("%s: skipped%s", id, suffix(e.Reason))
	case muster.EvTaskCancelled:
		return fmt.Sprintf("%s: cancelled%s", id, suffix(e.Reason))
	case muster.EvNote:
		return fmt.Sprintf("%s: note: %s", id, textsafe.Sanitize(e.Message))
	case muster.EvWarning:
		return "warning: " + textsafe.Sanitize(e.Message)
	case muster.EvRunFinished:
		return "run " + textsafe.Sanitize(e.State)
	case muster.EvRunInterrupted:
		return "run interrupted (resumable)"
	}
	return ""
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + textsafe.Sanitize(reason)
}

// Printer writes plain progress lines, one per event people need to see,
// each prefixed with the run's [done/total] count, in the manner of a
// build tool: "[3/8] api: gate test passed". It is the view used when
// the output is not a terminal, in CI, or with --plain.
type Printer struct {
	w  io.Writer
	st *state
	// Time, when true, starts each line with the event's clock time.
	Time bool
}

// NewPrinter returns a Printer writing to w.
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w, st: newState()} }

// Print folds e and writes its line, if it has one.
func (p *Printer) Print(e muster.Event) error {
	p.st.apply(e)
	line := PlainLine(e)
	if line == "" || e.Type == muster.EvToolUse {
		return nil
	}
	done, _, _, total := p.st.Counts()
	prefix := fmt.Sprintf("[%d/%d] ", done, total)
	if p.Time && !e.Time.IsZero() {
		prefix = e.Time.UTC().Format(time.TimeOnly) + " " + prefix
	}
	_, err := io.WriteString(p.w, prefix+line+"\n")
	return err
}

package runlog

import (
	"fmt"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/textsafe"
)

// merger places an attempt's log records among its journal events: a
// coder's prompt right after the phase that starts its round; its output
// and diff stat before the first event that follows the agent (gates,
// review, a violation, a fix round, the commit, the end); a reviewer's
// output before its findings; a gate's command and exit status on the
// GateRan they belong to. Records left over come before the result.
type merger struct {
	task    muster.TaskID
	attempt int
	recs    []muster.LogRecord
	used    []bool
	out     []Entry
	round   int
	coder   string // the coder's slot
	// said holds the messages each slot printed, so that an output
	// record keeps only what they do not already show.
	said map[string]map[string]bool
	seq  int64
}

func attempt(events []muster.Event, id muster.TaskID, n int, recs []muster.LogRecord) []Entry {
	m := &merger{task: id, attempt: n, recs: recs, used: make([]bool, len(recs))}
	racing := false
	for i := range events {
		e := &events[i]
		if e.Task != id {
			continue
		}
		if m.race(e, &racing) || e.Attempt != n {
			continue
		}
		m.seq = e.Seq
		m.event(e)
	}
	m.flush(func(muster.LogRecord) bool { return true })
	return m.out
}

func (m *merger) add(e Entry) {
	e.Task, e.Attempt, e.Seq = string(m.task), m.attempt, m.seq
	if e.Key == "" {
		e.Key = fmt.Sprintf("%s-%d-j%d-%s", m.task, m.attempt, m.seq, e.Kind)
	}
	m.out = append(m.out, e)
}

// flush adds the unused records that keep says to, in file order.
func (m *merger) flush(keep func(muster.LogRecord) bool) {
	for i, r := range m.recs {
		if m.used[i] || !keep(r) {
			continue
		}
		m.used[i] = true
		if r.Kind == muster.LogOutput {
			if r.Text = m.unseen(r.Slot, r.Text); r.Text == "" {
				continue
			}
		}
		e := Entry{Time: r.Time, Round: r.Round, Kind: r.Kind, Slot: r.Slot, Role: r.Role, Gate: r.Gate, Command: r.Command, Exit: r.Exit, Text: r.Text, DurationMS: r.DurationMS,
			Key: fmt.Sprintf("%s-%d-l%d", m.task, m.attempt, i)}
		if r.Kind == muster.LogGate {
			// A gate record whose GateRan is not in the journal (cut
			// short by a crash): its command and exit, no verdict.
			e.Kind = KindGate
		}
		m.add(e)
	}
}

// flushAgent adds the coder's output and diff stat of the rounds up to
// and including round.
func (m *merger) flushAgent(round int) {
	m.flush(func(r muster.LogRecord) bool {
		return r.Round <= round && r.Role != muster.RoleReviewer && (r.Kind == muster.LogOutput || r.Kind == muster.LogDiffStat)
	})
}

func (m *merger) event(e *muster.Event) {
	switch e.Type {
	case muster.EvTaskStarted:
		role := e.Role
		if role == "" {
			role = muster.RoleCoder
		}
		m.coder = e.Slot()
		m.add(Entry{Time: e.Time, Kind: KindStarted, Slot: e.Slot(), Role: role, Text: fmt.Sprintf("attempt %d on %s", e.Attempt, e.Slot())})
	case muster.EvPhase:
		m.phase(e)
	case muster.EvMessage:
		m.message(e)
	case muster.EvToolUse:
		text := e.Tool
		if e.Args != "" {
			text += " " + e.Args
		}
		m.add(Entry{Time: e.Time, Round: m.round, Kind: KindTool, Slot: e.Slot(), Role: m.roleOf(e), Text: text})
	case muster.EvViolation:
		m.flushAgent(m.round)
		text := "changed paths outside Owns: " + strings.Join(e.Paths, ", ")
		if e.Reason != "" {
			text = e.Reason + ": " + strings.Join(e.Paths, ", ")
		}
		m.add(Entry{Time: e.Time, Round: e.Round, Kind: KindViolation, Text: text})
	case muster.EvBlocked:
		m.add(Entry{Time: e.Time, Round: m.round, Kind: KindBlocked, Slot: e.Slot(), Role: m.roleOf(e), Text: textsafe.Sanitize(e.BlockedText())})
	case muster.EvGateRan:
		m.gate(e)
	case muster.EvLoopAttempt:
		m.flushAgent(m.round)
		m.add(Entry{Time: e.Time, Round: e.Round, Kind: KindCheck, Gate: e.Gate, Passed: e.Passed, Text: e.Output})
	case muster.EvReviewed:
		m.flushAgent(m.round)
		slot := e.Slot()
		m.flush(func(r muster.LogRecord) bool {
			return r.Kind == muster.LogOutput && r.Role == muster.RoleReviewer && r.Slot == slot && r.Round == e.Round
		})
		m.add(Entry{Time: e.Time, Round: e.Round, Kind: KindReview, Slot: slot, Role: muster.RoleReviewer, Findings: e.Findings, Text: findingsText(e.Findings)})
	case muster.EvFixRound:
		m.flushAgent(m.round)
		m.add(Entry{Time: e.Time, Round: e.Round, Kind: KindFix, Text: e.Reason})
	case muster.EvWarning:
		m.add(Entry{Time: e.Time, Round: m.round, Kind: KindWarning, Slot: e.Slot(), Text: e.Message})
	case muster.EvNote:
		m.add(Entry{Time: e.Time, Round: m.round, Kind: KindNote, Text: e.Message})
	case muster.EvCommitted:
		m.flushAgent(m.round)
		m.add(Entry{Time: e.Time, Round: m.round, Kind: KindCommit, Text: textsafe.Short(e.Commit) + " " + strings.Join(e.Paths, ", ")})
	case muster.EvIntegrated:
		m.add(Entry{Time: e.Time, Round: m.round, Kind: KindIntegrate, Text: "on the run branch at " + textsafe.Short(e.Commit)})
	case muster.EvLoopEnded:
		m.add(Entry{Time: e.Time, Round: e.Round, Kind: KindCheck, State: e.State, Text: e.Reason})
	case muster.EvTaskSucceeded, muster.EvTaskFailed, muster.EvTaskCancelled:
		m.result(e)
	}
}

// phase: a new agent round shows its prompt after the last round's
// output; another phase ends the agent's round.
func (m *merger) phase(e *muster.Event) {
	if e.Phase == "agent" {
		m.flushAgent(e.Round - 1)
		m.round = e.Round
		m.flush(func(r muster.LogRecord) bool {
			return r.Kind == muster.LogPrompt && r.Round == e.Round && r.Role != muster.RoleReviewer
		})
		return
	}
	m.flushAgent(m.round)
	m.round = e.Round
}

// message adds an agent's message and remembers it, so its output does
// not show it twice.
func (m *merger) message(e *muster.Event) {
	if m.said == nil {
		m.said = map[string]map[string]bool{}
	}
	if m.said[e.Slot()] == nil {
		m.said[e.Slot()] = map[string]bool{}
	}
	m.said[e.Slot()][strings.TrimSpace(e.Message)] = true
	m.add(Entry{Time: e.Time, Round: m.round, Kind: KindMessage, Slot: e.Slot(), Role: m.roleOf(e), Text: e.Message})
}

// gate adds a gate's result with its record's command, exit and output.
func (m *merger) gate(e *muster.Event) {
	m.flushAgent(m.round)
	en := Entry{Time: e.Time, Round: e.Round, Kind: KindGate, Gate: e.Gate, Passed: e.Passed, Text: e.Output}
	for i, r := range m.recs {
		if !m.used[i] && r.Kind == muster.LogGate && r.Gate == e.Gate && r.Round == e.Round {
			m.used[i] = true
			en.Command, en.Exit, en.DurationMS, en.Full = r.Command, r.Exit, r.DurationMS, r.Text
			break
		}
	}
	if e.Reason != "" {
		en.State = e.Reason
	}
	m.add(en)
}

// result ends the attempt: what is left of its records, then its state.
func (m *merger) result(e *muster.Event) {
	m.flush(func(muster.LogRecord) bool { return true })
	state := string(map[muster.EventType]muster.TaskState{muster.EvTaskSucceeded: muster.StateSucceeded, muster.EvTaskFailed: muster.StateFailed, muster.EvTaskCancelled: muster.StateCancelled}[e.Type])
	if e.Type == muster.EvTaskFailed && e.Retry {
		state = "retrying"
	}
	text := e.Reason
	if text == "" && e.Commit != "" {
		text = "commit " + textsafe.Short(e.Commit)
	}
	m.add(Entry{Time: e.Time, Round: m.round, Kind: KindResult, State: state, Text: text})
}

// unseen returns the lines of an agent's output that its messages do not
// already show (its stderr, say, or what came past the message bound).
func (m *merger) unseen(slot, text string) string {
	said := m.said[slot]
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if t := strings.TrimSpace(l); t != "" && !said[t] {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// roleOf tells a reviewer's events from the coder's by their slot.
func (m *merger) roleOf(e *muster.Event) muster.Role {
	if s := e.Slot(); s != "" && m.coder != "" && s != m.coder {
		return muster.RoleReviewer
	}
	return muster.RoleCoder
}

func findingsText(fs []muster.Finding) string {
	if len(fs) == 0 {
		return "approved: no findings"
	}
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s: %s", f.Severity, f.Title)
		if f.Path != "" {
			loc := f.Path
			if f.Line > 0 {
				loc = fmt.Sprintf("%s:%d", f.Path, f.Line)
			}
			b.WriteString(" (" + loc + ")")
		}
		if f.Detail != "" {
			b.WriteString(" — " + f.Detail)
		}
	}
	return b.String()
}

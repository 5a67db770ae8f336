package driver

import (
	"fmt"

	"github.com/muster-run/muster"
)

// Bounds on what one attempt's agents report, whatever their kind
// (README "Caps"; docs/agents-http.md). Past a count cap, records are
// dropped and one summary event says how many.
const (
	// maxToolRecords is how many tool records of one attempt become
	// ToolUse events; the rest are counted in one summary event.
	maxToolRecords = 500
	// maxMessageRecords bounds the Message events of one attempt.
	maxMessageRecords = 500
	// maxUsageRecords is how many usage records of one attempt become
	// TokensUsed events one by one; past it they are summed into one
	// event per model at the end of each invocation (never dropped).
	maxUsageRecords = 500
	// maxBlockedRecords bounds the Blocked events of one attempt (each
	// host and port once).
	maxBlockedRecords = 50
	// maxNoteRecords bounds the notes records of one attempt.
	maxNoteRecords = 20
	// maxName bounds a tool name and a model name.
	maxName = 100
	// maxFindings bounds the findings of one review; maxFindingTitle and
	// maxFindingDetail bound their text.
	maxFindings      = 100
	maxFindingTitle  = 300
	maxFindingDetail = 2000
)

// counters are an attempt's record counts, for the caps above.
type counters struct {
	tools, messages, usages, notes int
	droppedTools, droppedMessages  int
	droppedNotes                   int
	// blocked are the hosts of the attempt's Blocked events so far.
	blocked map[string]bool
	// extra sums the usage records past maxUsageRecords, by model.
	extra      map[string]muster.Usage
	extraOrder []string
}

// red returns the run's redactor (Options.Redactor; none: text is kept
// as it is).
func (d *Driver) red() muster.Redactor {
	if d.opts.Redactor == nil {
		return keep{}
	}
	return d.opts.Redactor
}

// keep is the redactor of a driver given none.
type keep struct{}

func (keep) String(s string) string { return s }

// redactAll redacts each element of ss in place.
func redactAll(r muster.Redactor, ss []string) {
	for i := range ss {
		ss[i] = r.String(ss[i])
	}
}

// redactEvent redacts every text of an event an agent, a gate or an
// error may have put a secret in, before the event is journaled, shown
// or used in a prompt. IDs, commits and the run's inputs (config, the
// user's plan) are left as they are: the CLI journals a config with its
// secrets taken out (runner.Journaled), and tasks an agent planned are
// redacted when they are spliced in.
func (d *Driver) redactEvent(e *muster.Event) {
	r := d.red()
	e.Tool = r.String(e.Tool)
	e.Args = r.String(e.Args)
	e.Model = r.String(e.Model)
	e.Output = r.String(e.Output)
	e.Reason = r.String(e.Reason)
	e.Message = r.String(e.Message)
	// The worker that sent the event may still read its slices (a review's
	// findings go on into the fix round's prompt): redact copies.
	e.Paths = append([]string(nil), e.Paths...)
	redactAll(r, e.Paths)
	e.Findings = append([]muster.Finding(nil), e.Findings...)
	for i := range e.Findings {
		redactFinding(r, &e.Findings[i])
	}
}

func redactFinding(r muster.Redactor, f *muster.Finding) {
	f.Severity = r.String(f.Severity)
	f.Title = r.String(f.Title)
	f.Detail = r.String(f.Detail)
	f.Path = r.String(f.Path)
}

// redactTask redacts the texts of a task an agent wrote (a delegated one).
func (d *Driver) redactTask(t *muster.Task) {
	r := d.red()
	t.Title = r.String(t.Title)
	t.Prompt = r.String(t.Prompt)
	redactAll(r, t.Gates)
	redactAll(r, t.Owns)
	redactAll(r, t.Reads)
	redactAll(r, t.Satisfies)
	t.Run = r.String(t.Run)
}

// findings bounds and redacts the findings of one reviewer.
func (d *Driver) findings(fs []muster.Finding) []muster.Finding {
	if len(fs) > maxFindings {
		fs = fs[:maxFindings]
	}
	out := make([]muster.Finding, len(fs))
	for i, f := range fs {
		f.Severity = bound(f.Severity, maxName)
		f.Title = bound(f.Title, maxFindingTitle)
		f.Detail = bound(f.Detail, maxFindingDetail)
		f.Path = bound(f.Path, maxFindingTitle)
		if f.Line < 0 {
			f.Line = 0
		}
		redactFinding(d.red(), &f)
		out[i] = f
	}
	return out
}

// sane checks a usage record: counts below zero or past the bounds of
// muster.Usage.Sane are refused with a warning naming the agent and the
// record, and count as the bound they claim (never as a credit).
func (w *worker) sane(r *muster.Record, slot string) []muster.Event {
	u, why := r.Usage.Sane()
	if r.Problem != "" {
		if why != "" {
			why = r.Problem + "; " + why
		} else {
			why = r.Problem
		}
	}
	r.Usage = u
	if why == "" {
		return nil
	}
	return []muster.Event{{Type: muster.EvWarning, Executor: w.a.Executor, Reason: "usage refused",
		Message: fmt.Sprintf("%s reported an impossible usage record (model %q): %s", slot, bound(r.Model, maxName), why)}}
}

// overflow returns the summary events of the records the caps dropped
// or held back since the last call: one "N more tool calls" ToolUse, one
// Message, and the usage summed past maxUsageRecords.
func (w *worker) overflow(spec *muster.ExecutorSpec, role muster.Role, clone int) []muster.Event {
	c := &w.counts
	var evs []muster.Event
	if c.droppedTools > 0 {
		evs = append(evs, muster.Event{Type: muster.EvToolUse, Executor: spec.Name, Clone: clone, Tool: "…",
			Args: fmt.Sprintf("%d more tool calls (not recorded: at most %d a task attempt)", c.droppedTools, maxToolRecords)})
		c.droppedTools = 0
	}
	if c.droppedMessages > 0 {
		evs = append(evs, muster.Event{Type: muster.EvMessage, Executor: spec.Name, Clone: clone,
			Message: fmt.Sprintf("[%d more messages not recorded: at most %d a task attempt]", c.droppedMessages, maxMessageRecords)})
		c.droppedMessages = 0
	}
	if c.droppedNotes > 0 {
		evs = append(evs, muster.Event{Type: muster.EvWarning, Executor: spec.Name,
			Message: fmt.Sprintf("%s: %d more notes not recorded (at most %d a task attempt)", muster.Slot(spec.Name, clone), c.droppedNotes, maxNoteRecords)})
		c.droppedNotes = 0
	}
	for _, m := range c.extraOrder {
		evs = append(evs, muster.Event{Type: muster.EvTokensUsed, Executor: spec.Name, Clone: clone, Role: role, Model: m, Usage: c.extra[m]})
	}
	c.extra, c.extraOrder = nil, nil
	return evs
}

// source is a usage record's Source as journaled: only the values muster
// knows (an adapter cannot make its usage uncounted with another).
func source(s string) string {
	switch s {
	case muster.UsageProvider, muster.UsageClaim:
		return s
	}
	return ""
}

// blocked turns a blocked record into its event: once per host and port
// per attempt, at most maxBlockedRecords, the host bounded and redacted.
func (w *worker) blocked(r muster.Record) (muster.Event, bool) {
	c := &w.counts
	host := bound(w.d.red().String(r.Host), 255)
	if r.Port < 0 || r.Port > 65535 {
		r.Port = 0
	}
	e := muster.Event{Type: muster.EvBlocked, Host: host, Port: r.Port, Reason: bound(w.d.red().String(r.Text), maxName)}
	key := e.BlockedHost()
	if c.blocked[key] || len(c.blocked) >= maxBlockedRecords {
		return e, false
	}
	if c.blocked == nil {
		c.blocked = map[string]bool{}
	}
	c.blocked[key] = true
	return e, true
}

// gateBlocked sends the Blocked events of the hosts ("host:port") muster's
// proxy refused a gate, each once per attempt.
func (w *worker) gateBlocked(g muster.GateSpec, hosts []string) {
	for _, hp := range hosts {
		b := muster.BlockedEvent(hp, "gate "+g.Name)
		if e, ok := w.blocked(muster.Record{Host: b.Host, Port: b.Port, Text: b.Reason}); ok {
			w.send(e)
		}
	}
}

// record turns an executor's records into events: redacted, bounded
// (the caps of records.go) and, for usage, checked (sane).
func (w *worker) record(spec *muster.ExecutorSpec, role muster.Role, clone int) func(muster.Record) {
	return func(r muster.Record) {
		send := w.send
		if seq := r.FleetSeq; seq > 0 {
			// A fleet worker's report: its stream sequence goes into the
			// journal with what is made of it (fleet.DispatchOptions.From).
			send = func(evs ...muster.Event) {
				for i := range evs {
					evs[i].FleetSeq = seq
				}
				w.send(evs...)
			}
		}
		w.recordOne(spec, role, clone, r, send)
	}
}

// recordOne turns one record into events, sent with send.
func (w *worker) recordOne(spec *muster.ExecutorSpec, role muster.Role, clone int, r muster.Record, send func(...muster.Event)) {
	d, c := w.d, &w.counts
	red := d.red()
	r.Tool = bound(red.String(r.Tool), maxName)
	r.Model = bound(red.String(r.Model), maxName)
	switch r.Type {
	case muster.RecUsage:
		warn := w.sane(&r, muster.Slot(spec.Name, clone))
		u := r.Usage
		u.Estimated = false
		if u.CostMicros == 0 && d.opts.Price != nil && u.Tokens() > 0 {
			if cost, ok := d.opts.Price(r.Model, u); ok {
				u.CostMicros, u.Estimated = cost, true
			}
		}
		if c.usages++; c.usages > maxUsageRecords {
			if c.extra == nil {
				c.extra = map[string]muster.Usage{}
			}
			if _, ok := c.extra[r.Model]; !ok {
				c.extraOrder = append(c.extraOrder, r.Model)
			}
			sum := c.extra[r.Model]
			sum.Add(u)
			c.extra[r.Model] = sum
			if len(warn) > 0 {
				send(warn...)
			}
			return
		}
		send(append(warn, muster.Event{Type: muster.EvTokensUsed, Executor: spec.Name, Clone: clone, Role: role, Model: r.Model, Usage: u, Source: source(r.Source), Reason: bound(red.String(r.Text), maxName)})...)
	case muster.RecBlocked:
		if e, ok := w.blocked(r); ok {
			e.Executor, e.Clone, e.Role = spec.Name, clone, role
			send(e)
		}
	case muster.RecTool:
		if c.tools++; c.tools > maxToolRecords {
			c.droppedTools++
			return
		}
		send(muster.Event{Type: muster.EvToolUse, Executor: spec.Name, Clone: clone, Tool: r.Tool, Args: red.String(bound(r.Args, maxMessage))})
	case muster.RecMessage:
		r.Text = red.String(r.Text)
		if role == w.a.Role {
			w.lastMsg = bound(r.Text, maxTranscript)
			w.transcript = tail(w.transcript+r.Text+"\n", maxTranscript)
		}
		if c.messages++; c.messages > maxMessageRecords {
			c.droppedMessages++
			return
		}
		send(muster.Event{Type: muster.EvMessage, Executor: spec.Name, Clone: clone, Message: bound(r.Text, maxMessage)})
	case muster.RecNotes:
		if c.notes++; c.notes > maxNoteRecords {
			c.droppedNotes++
			return
		}
		// Held until the round is accepted: a rejected round's notes
		// (its gate failed, its review asked for changes) are not
		// shared.
		if len(w.pendingNotes) < maxPendingNotes {
			w.pendingNotes = append(w.pendingNotes, pendingNote{text: red.String(bound(r.Text, maxNote)), executor: spec.Name, clone: clone})
		}
	case muster.RecViolation:
		send(muster.Event{Type: muster.EvViolation, Executor: spec.Name, Clone: clone, Paths: []string{red.String(bound(r.Text, maxMessage))},
			Reason: "the agent asked for a path outside its worktree (" + bound(r.Tool, 40) + "); refused"})
	case muster.RecSession:
		w.sessionID = r.SessionID
	case muster.RecPID:
		p := muster.Process{PID: r.PID}
		if w.d.opts.Identify != nil && r.PID > 0 {
			p = w.d.opts.Identify(r.PID) // now, while the process runs (or is a zombie)
		}
		send(muster.Event{Type: muster.EvAgentStarted, Executor: spec.Name, Clone: clone, Role: role, PID: r.PID, PIDStart: p.Start, BootID: p.Boot})
	case muster.RecWorker:
		send(muster.Event{Type: muster.EvWorkerAssigned, Executor: spec.Name, Clone: clone, Role: role, Worker: r.Worker, WorkerClone: r.WorkerClone})
	case muster.RecRefused:
		send(muster.Event{Type: muster.EvRefused, Executor: spec.Name, Clone: clone, Role: role, Worker: bound(r.Worker, 80),
			Subject: bound(r.Text, 200), Reason: red.String(bound(r.Tool, maxMessage))})
	}
}

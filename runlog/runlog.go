// Package runlog tells what happened in a run's attempts, in order: the
// prompt's head, what the agent printed (messages, tool calls, the end of
// its output), the diff stat, each gate's command, exit status and output
// tail, review findings, fix rounds and their prompts, and the final
// reason. It reads the journal's events and the attempt logs the driver
// keeps in the run directory (muster.LogRecord); it runs nothing. muster
// logs prints its entries, and the MCP server serves them.
package runlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/muster-run/muster"
)

// Entry kinds.
const (
	KindStarted   = "started"   // an attempt began (Slot, Role)
	KindPrompt    = "prompt"    // the head of the coder's prompt; a fix round's: its reasons
	KindMessage   = "message"   // a line the agent printed (untrusted)
	KindTool      = "tool"      // a tool call (Text: its name and arguments)
	KindOutput    = "output"    // the end of the agent's output, stderr included
	KindDiffStat  = "diffstat"  // the files and lines a round changed
	KindViolation = "violation" // paths changed outside Owns
	KindBlocked   = "blocked"   // a request muster's endpoint or proxy refused (Text: host:port and why)
	KindGate      = "gate"      // a gate: Gate, Command, Exit, Passed, Text (output tail)
	KindCheck     = "check"     // a check of a Loop task
	KindReview    = "review"    // a reviewer's findings
	KindFix       = "fix"       // a fix round begins (Text: why)
	KindWarning   = "warning"
	KindNote      = "note"   // a finding shared with later tasks
	KindCommit    = "commit" // the task commit (Text: its paths)
	KindIntegrate = "integrated"
	KindResult    = "result" // the attempt's end: State and Text (the reason)
	KindRace      = "race"   // a race candidate's end (Passed, Text: its change or why it is out), or the race's winner
)

// Entry is one thing that happened in an attempt. Text that came from an
// agent is untrusted: a terminal printer must strip control sequences.
type Entry struct {
	Time    time.Time `json:"time"`
	Task    string    `json:"task"`
	Attempt int       `json:"attempt"`
	Round   int       `json:"round"`
	Kind    string    `json:"kind"`
	// Slot and Role name the agent ("claude#2", "coder").
	Slot string      `json:"slot,omitempty"`
	Role muster.Role `json:"role,omitempty"`
	// Gate, Command, Exit and Passed describe a gate or check.
	Gate    string `json:"gate,omitempty"`
	Command string `json:"command,omitempty"`
	Exit    *int   `json:"exit,omitempty"`
	Passed  *bool  `json:"passed,omitempty"`
	// DurationMS is a gate run's wall time; Full is its whole output
	// from the attempt log (Text is the journal's tail).
	DurationMS int64  `json:"duration_ms,omitempty"`
	Full       string `json:"full,omitempty"`
	// Findings are a review's.
	Findings []muster.Finding `json:"findings,omitempty"`
	// State is a result's task state (succeeded, failed, cancelled,
	// skipped, running, pending; a failure to be retried is "retrying").
	State string `json:"state,omitempty"`
	Text  string `json:"text,omitempty"`

	// Seq is the journal line the entry comes from or is placed at; Key
	// tells entries apart across rebuilds (for a follower).
	Seq int64  `json:"seq"`
	Key string `json:"-"`
}

// Query picks what to tell.
type Query struct {
	// Task is the task to tell; "" tells every task that started, or
	// ended, failures first (failed, skipped, cancelled), then the others
	// in plan order.
	Task muster.TaskID
	// Attempt is the attempt to tell: 0 the latest, -1 every one.
	Attempt int
	// Round, when not nil, keeps only the entries of that round.
	Round *int
	// Chrono orders the entries of all tasks as they happened (journal
	// order) rather than task by task (for following a live run).
	Chrono bool
}

// ErrNotFound is wrapped by Build's errors for a task, attempt or round
// that is not in the run.
var ErrNotFound = errors.New("not found")

// Build returns the entries of the run whose journal holds events and
// whose run directory is dir ("" reads no attempt logs).
func Build(events []muster.Event, dir string, q Query) ([]Entry, error) {
	tasks := fold(events)
	var ids []muster.TaskID
	if q.Task != "" {
		t := tasks.byID[q.Task]
		if t == nil {
			return nil, fmt.Errorf("task %q is not in the run (its tasks: %s): %w", q.Task, strings.Join(tasks.names(), ", "), ErrNotFound)
		}
		if q.Attempt > t.attempts {
			return nil, fmt.Errorf("task %s has %d attempts, not %d: %w", q.Task, t.attempts, q.Attempt, ErrNotFound)
		}
		ids = []muster.TaskID{q.Task}
	} else {
		ids = tasks.failuresFirst()
	}
	var out []Entry
	for _, id := range ids {
		t := tasks.byID[id]
		first, last := t.attempts, t.attempts
		switch {
		case q.Attempt > 0:
			first, last = q.Attempt, q.Attempt
		case q.Attempt < 0:
			first = 1
		}
		if t.attempts == 0 {
			out = append(out, t.unstarted())
			continue
		}
		for a := first; a <= last; a++ {
			recs := readLog(dir, id, a)
			out = append(out, attempt(events, id, a, recs)...)
		}
		if last == t.attempts && t.skipReason != "" {
			out = append(out, t.unstarted())
		}
	}
	if q.Round != nil {
		var err error
		if out, err = onlyRound(out, q); err != nil {
			return nil, err
		}
	}
	if q.Chrono {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	}
	if out == nil {
		out = []Entry{}
	}
	return out, nil
}

// onlyRound keeps the entries of q's round. A task that has entries,
// none of that round, never reached it: ErrNotFound, naming its rounds.
func onlyRound(out []Entry, q Query) ([]Entry, error) {
	kept, last := out[:0:0], 0
	for _, e := range out {
		last = max(last, e.Round)
		if e.Round == *q.Round {
			kept = append(kept, e)
		}
	}
	if q.Task != "" && len(out) > 0 && len(kept) == 0 {
		return nil, fmt.Errorf("task %s has no round %d (its rounds: 0 to %d): %w", q.Task, *q.Round, last, ErrNotFound)
	}
	return kept, nil
}

// task is what fold keeps of one task.
type task struct {
	id         muster.TaskID
	index      int
	title      string
	state      muster.TaskState
	reason     string
	skipReason string
	attempts   int
	seq        int64
	time       time.Time
}

type taskSet struct {
	order []muster.TaskID
	byID  map[muster.TaskID]*task
}

func fold(events []muster.Event) *taskSet {
	s := &taskSet{byID: map[muster.TaskID]*task{}}
	for i := range events {
		e := &events[i]
		if e.Type == muster.EvTasksPlanned || e.Type == muster.EvPlanAdopted {
			for _, pt := range e.Tasks {
				if pt == nil {
					continue
				}
				if old := s.byID[pt.ID]; old != nil {
					if e.Type == muster.EvPlanAdopted {
						old.title = pt.Title // an adopted version's new title
					}
					continue
				}
				t := &task{id: pt.ID, index: len(s.order), title: pt.Title, state: muster.StatePending}
				if pt.Done {
					t.state = muster.StateSucceeded
				}
				s.byID[pt.ID] = t
				s.order = append(s.order, pt.ID)
			}
			continue
		}
		t := s.byID[e.Task]
		if t == nil {
			continue
		}
		switch e.Type {
		case muster.EvTaskStarted:
			t.state, t.reason = muster.StateRunning, ""
			if e.Attempt > t.attempts {
				t.attempts = e.Attempt
			}
		case muster.EvTaskSucceeded:
			t.state, t.reason = muster.StateSucceeded, e.Reason
		case muster.EvTaskFailed:
			if e.Retry {
				t.state, t.reason = muster.StatePending, e.Reason
			} else {
				t.state, t.reason = muster.StateFailed, e.Reason
			}
		case muster.EvTaskSkipped:
			t.state, t.reason, t.skipReason = muster.StateSkipped, e.Reason, e.Reason
		case muster.EvTaskCancelled:
			t.state, t.reason = muster.StateCancelled, e.Reason
		default:
			continue
		}
		t.seq, t.time = e.Seq, e.Time
	}
	return s
}

func (s *taskSet) names() []string {
	out := make([]string, len(s.order))
	for i, id := range s.order {
		out[i] = string(id)
	}
	return out
}

// failuresFirst lists the tasks that started or ended: failed, skipped
// and cancelled ones first, then the others, each in plan order.
func (s *taskSet) failuresFirst() []muster.TaskID {
	rank := func(t *task) int {
		switch t.state {
		case muster.StateFailed:
			return 0
		case muster.StateSkipped:
			return 1
		case muster.StateCancelled:
			return 2
		}
		return 3
	}
	var ids []muster.TaskID
	for _, id := range s.order {
		t := s.byID[id]
		if t.attempts > 0 || t.skipReason != "" {
			ids = append(ids, id)
		}
	}
	sort.SliceStable(ids, func(i, j int) bool { return rank(s.byID[ids[i]]) < rank(s.byID[ids[j]]) })
	return ids
}

// unstarted is the one entry of a task that never ran (or was skipped
// after its last attempt was cancelled).
func (t *task) unstarted() Entry {
	text := t.reason
	if t.state == muster.StatePending && text == "" {
		text = "not started yet"
	}
	return Entry{Time: t.time, Task: string(t.id), Kind: KindResult, State: string(t.state), Text: text, Seq: t.seq, Key: fmt.Sprintf("%s-end-%d", t.id, t.seq)}
}

// readLog reads an attempt's log file; a missing or unreadable file, or
// a line that does not decode, gives what could be read.
func readLog(dir string, task muster.TaskID, attempt int) []muster.LogRecord {
	if dir == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, muster.LogDir, muster.AttemptLogName(task, attempt)))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []muster.LogRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r muster.LogRecord
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		out = append(out, r)
	}
	return out
}

package driver

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/muster-run/muster"
)

// Bounds on notes and hand-offs in a prompt.
const (
	maxNote      = 4096
	maxNotesRead = 12 << 10
)

// notes is the run's notes file: findings tasks share with later tasks.
// Appends are serialised. The file is read once, then kept in memory as
// muster appends to it: muster is its only writer while it holds the
// run's journal (a resume reads it again), so a prompt costs no read of
// the disk (one per attempt and round showed in the scheduler's profile).
type notes struct {
	mu   sync.Mutex
	path string
	// red redacts every note before it is written.
	red muster.Redactor
	// text is the file's content once loaded (a missing file: empty).
	text   string
	loaded bool
}

// load reads the file unless it is loaded; a read that fails (other than
// a missing file) leaves it unloaded, to be tried again. Under mu.
func (n *notes) load() {
	if n.loaded {
		return
	}
	b, err := os.ReadFile(n.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return
	}
	n.text, n.loaded = string(b), true
}

// add appends a task's note. Failures to write lose the note, nothing more.
func (n *notes) add(task muster.TaskID, text string) {
	text = strings.TrimSpace(text)
	if n == nil || n.path == "" || text == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(n.path), 0o755); err != nil {
		return
	}
	text = bound(text, maxNote)
	if n.red != nil {
		text = n.red.String(text)
	}
	entry := "## From task " + string(task) + "\n" + text + "\n\n"
	// A task that runs again (resumed, retried, a fix round) often says
	// the same again: the notes keep one copy.
	n.load()
	if n.loaded && (strings.HasPrefix(n.text, entry) || strings.Contains(n.text, "\n\n"+entry)) {
		return
	}
	f, err := os.OpenFile(n.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	_, err = f.WriteString(entry)
	if err = errors.Join(err, f.Close()); err != nil {
		n.loaded = false // what the file holds now is read again
		return
	}
	n.text += entry
}

// read returns the end of the notes ("" when there are none).
func (n *notes) read() string {
	if n == nil || n.path == "" {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.load()
	if !n.loaded {
		return ""
	}
	return tail(n.text, maxNotesRead)
}

// findingsSection returns the text under a "## Findings" heading of an
// agent's transcript, up to the next heading of that level or above.
func findingsSection(transcript string) string {
	lines := strings.Split(transcript, "\n")
	start := -1
	for i, l := range lines {
		if strings.EqualFold(strings.TrimSpace(l), "## findings") {
			start = i + 1
		}
	}
	if start < 0 {
		return ""
	}
	var out []string
	for _, l := range lines[start:] {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "# ") || strings.HasPrefix(t, "## ") {
			break
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// maxPendingNotes bounds the notes records one round may share.
const maxPendingNotes = 20

// pendingNote is a notes record of the round under way.
type pendingNote struct {
	text     string
	executor string
	clone    int
}

// shareFindings appends the accepted round's notes records and the
// coder's "## Findings" section to the run's notes, before the task's
// success reaches the loop (so dependents, started after it, read them).
// A findings section that says what a notes record said is shared once.
func (w *worker) shareFindings() {
	said := map[string]bool{}
	for _, n := range w.pendingNotes {
		t := strings.TrimSpace(n.text)
		if t == "" || said[t] {
			continue
		}
		said[t] = true
		w.d.notes.add(w.a.Task, t)
		w.send(muster.Event{Type: muster.EvNote, Executor: n.executor, Clone: n.clone, Message: bound(t, maxGateOutput)})
	}
	w.pendingNotes = nil
	f := findingsSection(w.transcript)
	if f == "" || said[f] {
		return
	}
	w.d.notes.add(w.a.Task, f)
	w.send(muster.Event{Type: muster.EvNote, Message: bound(f, maxGateOutput)})
}

// handoff is what a finished task leaves its dependents.
type handoff struct {
	paths   []string
	message string
}

// observe keeps hand-offs from events, on the loop goroutine.
func (d *Driver) observe(e *muster.Event) {
	if e.Type != muster.EvCommitted || e.Task == "" {
		return
	}
	if d.handoffs == nil {
		d.handoffs = map[muster.TaskID]handoff{}
	}
	d.handoffs[e.Task] = handoff{paths: e.Paths, message: e.Message}
}

// oneLine folds whitespace, newlines included.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

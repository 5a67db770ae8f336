package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

// Bounds on an attempt's log file (muster.LogRecord).
const (
	maxLogPrompt   = 8 << 10
	maxLogDiffStat = 4 << 10
	// maxAttemptLog bounds one attempt's log file: past it, records are
	// dropped (the journal still has the facts).
	maxAttemptLog = 1 << 20
)

// attemptLogs writes the attempt log files of a run (Options.LogDir).
// Records pass through Options.Redact before they are written.
type attemptLogs struct {
	dir    string
	redact func(string) string
	clock  muster.Clock

	mu sync.Mutex // serialises writes (reviewers of one attempt run in turn, attempts in parallel)
}

// write appends one record to the log of a task's attempt. A failure to
// write loses the record, nothing more: the log is for people.
func (l *attemptLogs) write(task muster.TaskID, attempt int, r muster.LogRecord) {
	if l == nil || l.dir == "" || !safeName(string(task)) {
		return
	}
	r.Time = l.clock.Now().UTC()
	if l.redact != nil {
		r.Text = l.redact(r.Text)
		r.Command = l.redact(r.Command)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return
	}
	path := filepath.Join(l.dir, muster.AttemptLogName(task, attempt))
	if fi, err := os.Stat(path); err == nil && fi.Size()+int64(len(line)) > maxAttemptLog {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}

// safeName reports whether a task ID can name a file (plan IDs always
// can; this guards the path all the same).
func safeName(s string) bool {
	return s != "" && !strings.ContainsAny(s, `/\`) && s != "." && s != ".."
}

// log appends a record to the worker's attempt log.
func (w *worker) log(r muster.LogRecord) {
	w.d.logs.write(w.a.Task, w.a.Attempt, r)
}

// diffStat summarises a change as git diff --stat does: one line a file
// with its added and removed lines, and a total.
func diffStat(files []muster.FileStat) string {
	var b strings.Builder
	add, del := 0, 0
	for _, f := range files {
		fmt.Fprintf(&b, "%s | +%d -%d\n", f.Path, f.Added, f.Deleted)
		add, del = add+f.Added, del+f.Deleted
	}
	switch len(files) {
	case 0:
	case 1:
		fmt.Fprintf(&b, "1 file changed, +%d -%d", add, del)
	default:
		fmt.Fprintf(&b, "%d files changed, +%d -%d", len(files), add, del)
	}
	return bound(b.String(), maxLogDiffStat)
}

// promptHead is what an attempt log keeps of a prompt: its head, or for a
// fix round (or a repair, or a redo after a conflict) the part that says
// why it is asked again, which the head would cut off.
func promptHead(prompt string) string {
	for _, h := range []string{"\n## Fix round ", "\n## Repair attempt "} {
		if i := strings.Index(prompt, h); i >= 0 {
			return bound(prompt[i+1:], maxLogPrompt)
		}
	}
	return bound(prompt, maxLogPrompt)
}

// summarize logs which files the round's change touched, with their
// lines (the attempt log's diffstat), and checks that a fix round
// changed something (engine.Attempt.Diff, on the change's digest).
func (w *worker) summarize(ctx context.Context, m *engine.Attempt, round int) []muster.Event {
	sum, err := w.d.opts.Workspace.Summary(ctx, w.dir, w.base)
	if err != nil {
		return w.opFailed("diff the change", err, false)
	}
	w.log(muster.LogRecord{Kind: muster.LogDiffStat, Round: round, Text: diffStat(sum.Files)})
	if st := m.Diff(sum.Digest); st.Kind != engine.StepGo {
		return w.step(st)
	}
	return nil
}

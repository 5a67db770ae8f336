package planner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
)

// maxTryLog bounds what a try's log keeps of the planner's output.
const maxTryLog = 64 << 10

// logOutput keeps the end of what the planner printed (stderr included)
// in the session's logs directory, as an attempt's log: muster logs plan
// --run SESSION shows it. Redacted; nothing when LogDir is "" or the
// output is empty. A log that cannot be written is only a lost record.
func (s *session) logOutput(try int, out string) {
	if s.opts.LogDir == "" || strings.TrimSpace(out) == "" {
		return
	}
	if len(out) > maxTryLog {
		out = out[len(out)-maxTryLog:]
	}
	line, err := json.Marshal(muster.LogRecord{Time: s.clock.Now().UTC(), Kind: muster.LogOutput, Role: muster.RolePlanner,
		Slot: muster.Slot(s.opts.Spec.Name, s.clone), Text: s.red(out)})
	if err != nil {
		return
	}
	if err := os.MkdirAll(s.opts.LogDir, 0o755); err != nil {
		return
	}
	f, err := os.OpenFile(filepath.Join(s.opts.LogDir, muster.AttemptLogName(TaskID, try)), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}

// lastLines is the end of a planner's output for a failure's reason:
// its last n lines, joined by " | ", redacted and bounded.
func (s *session) lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimRight(s.red(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bound(strings.Join(lines, " | "), 300)
}

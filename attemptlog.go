package muster

import (
	"fmt"
	"time"
)

// LogDir is the directory of the run directory that holds attempt logs.
const LogDir = "logs"

// Kinds of LogRecord.
const (
	LogPrompt   = "prompt"   // the head of a prompt an agent read
	LogOutput   = "output"   // the end of what an agent printed, stderr included
	LogDiffStat = "diffstat" // files and lines a round's change touched
	LogGate     = "gate"     // a gate's command and exit status
)

// LogRecord is one line of an attempt's log file (LogDir/AttemptLogName):
// what an attempt did that the journal does not keep (the prompt, the
// agent's stderr, a gate's command and exit status, the diff stat). The
// file is written as the attempt goes, bounded and redacted; it is a
// record for people (muster logs), never a fact the run depends on.
type LogRecord struct {
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"`
	Round int       `json:"round"`
	// Role and Slot name the agent (prompt, output).
	Role Role   `json:"role,omitempty"`
	Slot string `json:"slot,omitempty"`
	// Gate, Command and Exit describe a gate run.
	Gate    string `json:"gate,omitempty"`
	Command string `json:"command,omitempty"`
	Exit    *int   `json:"exit,omitempty"`
	// DurationMS is a gate run's wall time.
	DurationMS int64  `json:"duration_ms,omitempty"`
	Text       string `json:"text,omitempty"`
}

// AttemptLogName is the file name of one attempt's log.
func AttemptLogName(task TaskID, attempt int) string {
	return fmt.Sprintf("%s-%d.jsonl", task, attempt)
}

package agentkit

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/redact"
)

// Bounds on what a stream keeps and reports.
const (
	MaxMessage = 2000     // characters of one message record
	MaxArgs    = 120      // characters of a tool record's Args
	MaxTail    = 4096     // bytes of ExecResult.Tail
	maxFinal   = 64 << 10 // bytes of the final answer kept for findings
)

// Stream is the state an adapter's line parser fills while an agent runs.
// Its methods emit records; they are called from one goroutine.
type Stream struct {
	emit func(muster.Record)
	red  *redact.Redactor

	// SessionID is the agent's session, once known.
	SessionID string
	// Model is the model the agent reports using.
	Model string
	// Final is the agent's final answer (or its last assistant text).
	Final string
	// Done says the CLI's terminal event arrived (result, turn.completed...).
	Done bool
	// Failed says the terminal event reported an error.
	Failed bool
	// Status is an HTTP status the CLI reported for a failed API call.
	Status int
	// Errors are error messages from the stream, in order.
	Errors []string
	// Usage sums the usage records emitted.
	Usage muster.Usage
	// UsageSeen says a usage record was emitted.
	UsageSeen bool
	// Bad counts stdout lines that looked like JSON but did not decode.
	Bad int
	// Lines counts JSON events.
	Lines int
	// RetryAfter is a delay the CLI itself announced for a retry.
	RetryAfterMS int64

	tail []byte
}

// NewStream returns a stream that emits through emit (nil: discard) and
// redacts the given secret values from everything it keeps.
func NewStream(emit func(muster.Record), secrets ...string) *Stream {
	if emit == nil {
		emit = func(muster.Record) {}
	}
	return &Stream{emit: emit, red: redact.New(secrets...)}
}

// Redact replaces known secret values, key-shaped strings and URL
// user-info in text (internal/redact).
func (s *Stream) Redact(text string) string { return s.red.String(text) }

// Session records the agent's session ID (once per distinct ID).
func (s *Stream) Session(id string) {
	if id == "" || id == s.SessionID {
		return
	}
	s.SessionID = id
	s.emit(muster.Record{Type: muster.RecSession, SessionID: id})
}

// Message records an assistant message, bounded.
func (s *Stream) Message(text string) {
	text = strings.TrimSpace(s.Redact(text))
	if text == "" {
		return
	}
	s.Note("assistant: " + text)
	s.emit(muster.Record{Type: muster.RecMessage, Text: Clip(text, MaxMessage)})
}

// SetFinal sets the final answer (bounded).
func (s *Stream) SetFinal(text string) {
	if len(text) > maxFinal {
		text = text[len(text)-maxFinal:]
	}
	s.Final = text
}

// Tool records a tool use with its input summarised.
func (s *Stream) Tool(name string, input any) {
	args := s.Redact(Summarize(input))
	s.Note("tool " + name + " " + args)
	s.emit(muster.Record{Type: muster.RecTool, Tool: name, Args: args})
}

// UsageRecord emits one usage record (none for zero usage).
func (s *Stream) UsageRecord(model string, u muster.Usage) {
	if u.IsZero() {
		return
	}
	if model == "" {
		model = s.Model
	}
	s.Usage.Add(u)
	s.UsageSeen = true
	s.emit(muster.Record{Type: muster.RecUsage, Model: model, Usage: u})
}

// Error records an error message from the stream.
func (s *Stream) Error(msg string) {
	msg = strings.TrimSpace(s.Redact(msg))
	if msg == "" {
		return
	}
	s.Errors = append(s.Errors, Clip(msg, 1000))
	s.Note("error: " + msg)
}

// Note appends text to the transcript tail.
func (s *Stream) Note(text string) {
	s.tail = append(s.tail, s.Redact(text)...)
	s.tail = append(s.tail, '\n')
	if len(s.tail) > 2*MaxTail {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-MaxTail:]...)
	}
}

// Tail returns the end of the transcript, redacted.
func (s *Stream) Tail() string {
	t := s.tail
	if len(t) > MaxTail {
		t = t[len(t)-MaxTail:]
	}
	return s.Redact(string(t))
}

// Emit passes a record through.
func (s *Stream) Emit(r muster.Record) { s.emit(r) }

// salient are the input keys that best name what a tool call does, in order.
var salient = []string{"command", "cmd", "file_path", "filePath", "path", "pattern", "query", "url", "description", "prompt"}

// Summarize renders a tool input as one short line: the first salient key's
// value, else sorted k=v pairs, else the raw text.
func Summarize(input any) string {
	switch v := input.(type) {
	case nil:
		return ""
	case string:
		var m map[string]any
		if json.Unmarshal([]byte(v), &m) == nil {
			return Summarize(m)
		}
		return Clip(oneLine(v), MaxArgs)
	case json.RawMessage:
		var x any
		if json.Unmarshal(v, &x) == nil {
			return Summarize(x)
		}
		return Clip(oneLine(string(v)), MaxArgs)
	case map[string]any:
		for _, k := range salient {
			if x, ok := v[k]; ok {
				return Clip(oneLine(scalar(x)), MaxArgs)
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+scalar(v[k]))
		}
		return Clip(oneLine(strings.Join(parts, " ")), MaxArgs)
	}
	return Clip(oneLine(scalar(input)), MaxArgs)
}

func scalar(x any) string {
	switch v := x.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, e := range v {
			parts = append(parts, scalar(e))
		}
		return strings.Join(parts, " ")
	case nil:
		return ""
	}
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return string(b)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Clip cuts s to at most n bytes on a rune boundary, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "..."
}

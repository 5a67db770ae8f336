package journal

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/muster-run/muster"
)

// The journal's line encoder. Every event the driver writes goes through
// it, about ten a task, so it appends without reflection the bytes
// encoding/json's Encoder (SetEscapeHTML(false)) writes for a
// muster.Event, newline included, byte for byte (a property test holds
// it to that over random events, odd strings included). An event it does
// not cover (Config, Tasks, Expected or Spec set: RunStarted, TasksPlanned,
// PlanAdopted, ExecutorJoined; a time encoding/json refuses) goes
// through encoding/json itself, and
// so does every event when muster.Event's fields are no longer the ones
// it knows (eventShape): a new field is never silently left out.

// appendLine appends e's journal line to b: the fast encoder's, or
// encoding/json's where it does not cover e.
func appendLine(b []byte, e *muster.Event) ([]byte, error) {
	if b, ok := appendEvent(b, e); ok {
		return b, nil
	}
	return appendEventStd(b, e)
}

// appendEvent appends e's journal line to b. ok is false when e is not
// covered; b is then returned unchanged.
func appendEvent(b []byte, e *muster.Event) (out []byte, ok bool) {
	if !fastEvents() || e.Config != nil || len(e.Tasks) > 0 || len(e.Expected) > 0 || e.Spec != nil {
		return b, false
	}
	n := len(b)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"time":`...)
	if b, ok = appendTime(b, e.Time); !ok {
		return b[:n], false
	}
	b = append(b, `,"type":`...)
	b = appendString(b, string(e.Type))
	b = appendRun(b, e)
	b = appendAttempt(b, e)
	b = appendGate(b, e)
	if b, ok = appendEnd(b, e); !ok {
		return b[:n], false
	}
	return append(b, '}', '\n'), true
}

// appendRun: the run's fields, Schema to PlanHash.
func appendRun(b []byte, e *muster.Event) []byte {
	b = appendInt(b, `,"schema":`, int64(e.Schema))
	b = appendStr(b, `,"run":`, e.Run)
	b = appendStr(b, `,"kind":`, e.Kind)
	b = appendStr(b, `,"plan":`, e.Plan)
	b = appendStr(b, `,"base":`, e.Base)
	b = appendStr(b, `,"branch":`, e.Branch)
	b = appendStr(b, `,"ref":`, e.Ref)
	b = appendStr(b, `,"owner":`, e.Owner)
	// Config and Tasks are never set here (appendEvent).
	b = appendInt(b, `,"canon":`, int64(e.Canon))
	return appendStr(b, `,"plan_hash":`, e.PlanHash)
}

// appendAttempt: the attempt's fields, Task to Port (Usage inline).
func appendAttempt(b []byte, e *muster.Event) []byte {
	b = appendStr(b, `,"task":`, string(e.Task))
	b = appendInt(b, `,"attempt":`, int64(e.Attempt))
	b = appendInt(b, `,"round":`, int64(e.Round))
	b = appendStr(b, `,"executor":`, e.Executor)
	b = appendInt(b, `,"clone":`, int64(e.Clone))
	b = appendStr(b, `,"role":`, string(e.Role))
	b = appendStr(b, `,"phase":`, e.Phase)
	b = appendStr(b, `,"tool":`, e.Tool)
	b = appendStr(b, `,"args":`, e.Args)
	b = appendStr(b, `,"model":`, e.Model)
	b = appendInt(b, `,"input_tokens":`, e.InputTokens)
	b = appendInt(b, `,"output_tokens":`, e.OutputTokens)
	b = appendInt(b, `,"cache_read_tokens":`, e.CacheReadTokens)
	b = appendInt(b, `,"cache_write_tokens":`, e.CacheWriteTokens)
	b = appendInt(b, `,"cost_micros":`, e.CostMicros)
	b = appendBool(b, `,"estimated":`, e.Estimated)
	b = appendStr(b, `,"source":`, e.Source)
	b = appendStr(b, `,"host":`, e.Host)
	return appendInt(b, `,"port":`, int64(e.Port))
}

// appendGate: Gate to Chain.
func appendGate(b []byte, e *muster.Event) []byte {
	b = appendStr(b, `,"gate":`, e.Gate)
	if e.Passed != nil {
		b = append(b, `,"passed":`...)
		b = strconv.AppendBool(b, *e.Passed)
	}
	b = appendStr(b, `,"baseline":`, e.Baseline)
	b = appendBool(b, `,"not_charged":`, e.NotCharged)
	b = appendStr(b, `,"output":`, e.Output)
	if len(e.Findings) > 0 {
		b = append(b, `,"findings":[`...)
		for i, f := range e.Findings {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"severity":`...)
			b = appendString(b, f.Severity)
			b = append(b, `,"title":`...)
			b = appendString(b, f.Title)
			b = appendStr(b, `,"detail":`, f.Detail)
			b = appendStr(b, `,"path":`, f.Path)
			b = appendInt(b, `,"line":`, int64(f.Line))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(e.Paths) > 0 {
		b = append(b, `,"paths":[`...)
		for i, p := range e.Paths {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p)
		}
		b = append(b, ']')
	}
	b = appendStr(b, `,"commit":`, e.Commit)
	b = appendStr(b, `,"tip":`, e.Tip)
	if len(e.Chain) > 0 {
		b = append(b, `,"chain":[`...)
		for i, l := range e.Chain {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"task":`...)
			b = appendString(b, string(l.Task))
			b = append(b, `,"commit":`...)
			b = appendString(b, l.Commit)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return b
}

// appendEnd: Reason to Judge. ok is false for an Until encoding/json
// refuses.
func appendEnd(b []byte, e *muster.Event) ([]byte, bool) {
	b = appendStr(b, `,"reason":`, e.Reason)
	b = appendStr(b, `,"cause":`, string(e.Cause))
	b = appendBool(b, `,"retry":`, e.Retry)
	b = appendStr(b, `,"message":`, e.Message)
	b = appendStr(b, `,"state":`, e.State)
	if e.Until != nil {
		var ok bool
		b = append(b, `,"until":`...)
		if b, ok = appendTime(b, *e.Until); !ok {
			return b, false
		}
	}
	b = appendStr(b, `,"session_id":`, e.SessionID)
	b = appendInt(b, `,"pid":`, int64(e.PID))
	if e.PIDStart != 0 {
		b = append(b, `,"pid_start":`...)
		b = strconv.AppendUint(b, e.PIDStart, 10)
	}
	b = appendStr(b, `,"boot_id":`, e.BootID)
	b = appendStr(b, `,"worker":`, e.Worker)
	b = appendInt(b, `,"worker_clone":`, int64(e.WorkerClone))
	b = appendInt(b, `,"followup":`, int64(e.Followup))
	b = appendStr(b, `,"subject":`, e.Subject)
	if e.FleetSeq != 0 {
		b = append(b, `,"fleet_seq":`...)
		b = strconv.AppendUint(b, e.FleetSeq, 10)
	}
	if len(e.Race) > 0 {
		b = append(b, `,"race":[`...)
		for i, c := range e.Race {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"executor":`...)
			b = appendString(b, c.Executor)
			b = append(b, `,"clone":`...)
			b = strconv.AppendInt(b, int64(c.Clone), 10)
			b = append(b, `,"attempt":`...)
			b = strconv.AppendInt(b, int64(c.Attempt), 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if e.Stat != nil {
		b = append(b, `,"stat":{"added":`...)
		b = strconv.AppendInt(b, int64(e.Stat.Added), 10)
		b = append(b, `,"deleted":`...)
		b = strconv.AppendInt(b, int64(e.Stat.Deleted), 10)
		b = append(b, `,"files":`...)
		b = strconv.AppendInt(b, int64(e.Stat.Files), 10)
		b = append(b, '}')
	}
	return appendStr(b, `,"judge":`, e.Judge), true
}

// appendStr appends key and s unless s is empty (omitempty).
func appendStr(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

// appendInt appends key and n unless n is 0 (omitempty).
func appendInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

// appendBool appends key and true when v is (omitempty).
func appendBool(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return append(append(b, key...), "true"...)
}

// appendTime appends t as time.Time's MarshalJSON does; ok is false
// where MarshalJSON fails (a year outside 0–9999, an offset of 24 hours
// or more), so that encoding/json reports it.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	// time's appendStrictRFC3339 checks, on the same bytes.
	switch {
	case len(b) < n0+5 || b[n0+4] != '-':
		return b, false
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		hh := b[len(b)-len("07:00"):]
		if ('0' <= c && c <= '9') || 10*(hh[0]-'0')+(hh[1]-'0') >= 24 {
			return b, false
		}
	}
	return append(b, '"'), true
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted as encoding/json does without HTML
// escaping: '"', '\\' and control characters escaped (\b \f \n \r \t
// short), invalid UTF-8 as \ufffd, U+2028 and U+2029 as \u2028, \u2029.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEventStd is the fallback: encoding/json's Encoder, as the
// journal always wrote.
func appendEventStd(b []byte, e *muster.Event) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return b, err
	}
	return buf.Bytes(), nil
}

// eventShape is muster.Event's JSON shape as the fast encoder writes it:
// each field's JSON name, Go type and omitempty, embedded structs
// inlined, and the shapes of the structs its slices and pointers hold.
// When shapeOf(muster.Event) differs (a field was added, renamed,
// retyped), fastEvents is false and every event goes through
// encoding/json; TestEncoderCoversEvent fails until the encoder is
// brought up to date.
const eventShape = `seq int64|time time.Time|type muster.EventType|schema int,omitempty|run string,omitempty|` +
	`kind string,omitempty|plan string,omitempty|base string,omitempty|branch string,omitempty|ref string,omitempty|` +
	`owner string,omitempty|config *muster.Config,omitempty|tasks []*muster.Task,omitempty|` +
	`expected map[muster.TaskID]float64,omitempty|canon int,omitempty|` +
	`plan_hash string,omitempty|task muster.TaskID,omitempty|attempt int,omitempty|round int,omitempty|` +
	`executor string,omitempty|clone int,omitempty|role muster.Role,omitempty|phase string,omitempty|` +
	`tool string,omitempty|args string,omitempty|model string,omitempty|input_tokens int64,omitempty|` +
	`output_tokens int64,omitempty|cache_read_tokens int64,omitempty|cache_write_tokens int64,omitempty|` +
	`cost_micros int64,omitempty|estimated bool,omitempty|source string,omitempty|host string,omitempty|` +
	`port int,omitempty|gate string,omitempty|passed *bool,omitempty|baseline string,omitempty|` +
	`not_charged bool,omitempty|output string,omitempty|findings []muster.Finding,omitempty{severity string|` +
	`title string|detail string,omitempty|path string,omitempty|line int,omitempty}|paths []string,omitempty|` +
	`commit string,omitempty|tip string,omitempty|chain []muster.ChainLink,omitempty{task muster.TaskID|` +
	`commit string}|reason string,omitempty|cause muster.CancelCause,omitempty|retry bool,omitempty|` +
	`message string,omitempty|state string,omitempty|until *time.Time,omitempty|session_id string,omitempty|` +
	`pid int,omitempty|pid_start uint64,omitempty|boot_id string,omitempty|spec *muster.ExecutorSpec,omitempty|worker string,omitempty|` +
	`worker_clone int,omitempty|followup int,omitempty|subject string,omitempty|fleet_seq uint64,omitempty|` +
	`race []muster.RaceCandidate,omitempty{executor string|clone int|attempt int}|` +
	`stat *muster.DiffStat,omitempty{added int|deleted int|files int}|judge string,omitempty`

// fastEvents is whether the fast encoder covers muster.Event as it is,
// found on first use (every start of muster, a sandbox's stage one
// among them, would otherwise walk the type).
var fastEvents = sync.OnceValue(func() bool { return shapeOf(reflect.TypeFor[muster.Event]()) == eventShape })

// shapeOf describes struct type t's JSON fields (see eventShape).
func shapeOf(t reflect.Type) string {
	var b []byte
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if !f.IsExported() || tag == "-" {
				continue
			}
			if len(b) > 0 && b[len(b)-1] != '{' {
				b = append(b, '|')
			}
			name, opts, _ := bytes.Cut([]byte(tag), []byte(","))
			if len(name) == 0 {
				name = []byte(f.Name)
			}
			b = append(b, name...)
			b = append(b, ' ')
			b = append(b, f.Type.String()...)
			if len(opts) > 0 {
				b = append(b, ',')
				b = append(b, opts...)
			}
			inner := f.Type
			for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice {
				inner = inner.Elem()
			}
			if marshals(inner) {
				// encoding/json writes what its method says.
				b = append(b, " marshals"...)
			}
			if inner.Kind() == reflect.Struct && inner.PkgPath() == reflect.TypeFor[muster.Event]().PkgPath() &&
				inner.Name() != "Config" && inner.Name() != "Task" && inner.Name() != "ExecutorSpec" {
				b = append(b, '{')
				walk(inner)
				b = append(b, '}')
			}
		}
	}
	walk(t)
	return string(b)
}

// marshals reports whether encoding/json writes t (or *t) through its
// own MarshalJSON or MarshalText; time.Time's is appendTime's.
func marshals(t reflect.Type) bool {
	if t == reflect.TypeFor[time.Time]() {
		return false
	}
	for _, m := range []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return false
}

package driver_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/redact"
)

// A flood of records of every kind keeps the journal bounded: tool and
// message records past their caps become one summary each, usage past its
// cap is summed (never dropped), findings are cut to their caps.
func TestRecordFloodIsBounded(t *testing.T) {
	h := newHarness(t, plan("a"), crew(1))
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		for i := 0; i < 1000; i++ {
			emit(muster.Record{Type: muster.RecTool, Tool: strings.Repeat("T", 5000), Args: strings.Repeat("a", 5000)})
			emit(muster.Record{Type: muster.RecMessage, Text: "hello"})
			emit(muster.Record{Type: muster.RecUsage, Model: strings.Repeat("m", 5000), Usage: muster.Usage{InputTokens: 1, CostMicros: 1}})
			emit(muster.Record{Type: muster.RecNotes, Text: fmt.Sprint("note ", i)}) // distinct: the same note is shared once
		}
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	if err != nil {
		t.Fatal(err)
	}
	if st.Usage.InputTokens != 1000 || st.Usage.CostMicros != 1000 {
		t.Fatalf("usage %+v, want every record counted", st.Usage)
	}
	n := map[muster.EventType]int{}
	summary := false
	for _, e := range h.j.Snapshot() {
		n[e.Type]++
		if len(e.Tool) > 104 || len(e.Model) > 104 || len(e.Args) > 1100 {
			t.Fatalf("event past the caps: tool %d, model %d, args %d", len(e.Tool), len(e.Model), len(e.Args))
		}
		if e.Type == muster.EvToolUse && strings.Contains(e.Args, "500 more tool calls") {
			summary = true
		}
	}
	if n[muster.EvToolUse] != 501 || !summary || n[muster.EvMessage] != 501 || n[muster.EvTokensUsed] != 501 || n[muster.EvNote] != 20 {
		t.Fatalf("events %v (tool summary %v)", n, summary)
	}
}

// Usage that lies is refused with a warning and never a credit: a
// negative cost counts as 0, int64-sized counts as the bound.
func TestLyingUsageIsRefused(t *testing.T) {
	h := newHarness(t, plan("a"), crew(1))
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Usage: muster.Usage{CostMicros: 100}})
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Usage: muster.Usage{InputTokens: -5, CostMicros: -1_000_000_000}})
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Usage: muster.Usage{InputTokens: math.MaxInt64}})
		emit(muster.Record{Type: muster.RecUsage, Model: "m", Usage: muster.Usage{InputTokens: math.MaxInt64}})
		return &muster.ExecResult{}, nil
	}
	st, err := h.run(t)
	if err != nil {
		t.Fatal(err)
	}
	if st.Usage.CostMicros != 100 || st.Usage.InputTokens != 2*muster.MaxRecordTokens {
		t.Fatalf("usage %+v", st.Usage)
	}
	warned := 0
	for _, e := range h.j.Snapshot() {
		if e.Type == muster.EvWarning && strings.Contains(e.Message, "x#1 reported an impossible usage record") {
			warned++
		}
	}
	if warned != 3 {
		t.Fatalf("%d warnings, want 3", warned)
	}
}

// The run's redactor covers every event, the notes and the prompts of
// later tasks, whatever the executor reported.
func TestRedactorCoversEventsNotesAndPrompts(t *testing.T) {
	h := newHarness(t, plan("a", "b:a"), crew(1))
	h.opts.Redactor = redact.New("knownsecret42")
	var promptB string
	h.ex.ExecuteFn = func(ctx context.Context, req *muster.ExecRequest, emit func(muster.Record)) (*muster.ExecResult, error) {
		if req.Task.ID == "b" {
			promptB = req.Prompt
		}
		s := "knownsecret42 sk-abcdefghijklmnopqrstuvwx"
		emit(muster.Record{Type: muster.RecTool, Tool: s, Args: s})
		emit(muster.Record{Type: muster.RecUsage, Model: s, Usage: muster.Usage{InputTokens: 1}})
		emit(muster.Record{Type: muster.RecNotes, Text: s})
		emit(muster.Record{Type: muster.RecMessage, Text: "## Findings\n" + s})
		return &muster.ExecResult{}, nil
	}
	if _, err := h.run(t); err != nil {
		t.Fatal(err)
	}
	for _, e := range h.j.Snapshot() {
		for _, s := range []string{e.Tool, e.Args, e.Model, e.Message, e.Reason} {
			if strings.Contains(s, "knownsecret42") || strings.Contains(s, "sk-abc") {
				t.Fatalf("%s keeps a secret: %q", e.Type, s)
			}
		}
	}
	if !strings.Contains(promptB, "[redacted]") || strings.Contains(promptB, "knownsecret42") {
		t.Fatalf("prompt of b:\n%s", promptB)
	}
}

package journal_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/journal"
)

// writeBigJournal writes a journal of about n events: a plan of n/100
// tasks, each run through lease, start, phases, tool uses, messages,
// usage, a gate, commit, integration, success and release, as a real run
// records them.
func writeBigJournal(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), journal.FileName)
	j, _, err := journal.Open(path, journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "sim", Kind: muster.ExecSim, Clones: 8}}}
	tasks := n / 100
	plan := make([]*muster.Task, tasks)
	for i := range plan {
		plan[i] = &muster.Task{ID: muster.TaskID(fmt.Sprintf("t%05d", i)), Title: "a task", Owns: []string{fmt.Sprintf("pkg/t%05d/", i)}}
		if i >= 8 {
			plan[i].After = []muster.TaskID{plan[i-8].ID}
		}
	}
	var batch []*muster.Event
	add := func(e muster.Event) {
		e.Time = t0
		batch = append(batch, &e)
	}
	add(muster.Event{Type: muster.EvRunStarted, Schema: muster.SchemaVersion, Run: "bench", Base: "b", Branch: "muster/bench", Config: cfg})
	add(muster.Event{Type: muster.EvTasksPlanned, Tasks: plan})
	passed := true
	for i, t := range plan {
		clone := i%8 + 1
		add(muster.Event{Type: muster.EvExecutorLeased, Task: t.ID, Executor: "sim", Clone: clone})
		add(muster.Event{Type: muster.EvTaskStarted, Task: t.ID, Attempt: 1, Executor: "sim", Clone: clone})
		add(muster.Event{Type: muster.EvAgentStarted, Task: t.ID, Executor: "sim", Clone: clone, PID: 4242})
		add(muster.Event{Type: muster.EvPhase, Task: t.ID, Phase: "agent"})
		for k := 0; k < 30; k++ {
			add(muster.Event{Type: muster.EvToolUse, Task: t.ID, Tool: "Edit", Args: fmt.Sprintf("pkg/t%05d/file%d.go", i, k)})
			add(muster.Event{Type: muster.EvMessage, Task: t.ID, Message: "Editing the handler so that it returns the version as JSON."})
			add(muster.Event{Type: muster.EvTokensUsed, Task: t.ID, Executor: "sim", Clone: clone, Model: "m",
				Usage: muster.Usage{InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 5000, CostMicros: 2100}})
		}
		for k := 0; k < 4; k++ {
			add(muster.Event{Type: muster.EvPhase, Task: t.ID, Phase: "gates"})
		}
		add(muster.Event{Type: muster.EvGateRan, Task: t.ID, Gate: "test", Passed: &passed, Output: "ok"})
		add(muster.Event{Type: muster.EvCommitted, Task: t.ID, Commit: "c0ffee", Paths: t.Owns})
		add(muster.Event{Type: muster.EvIntegrated, Task: t.ID, Commit: "c0ffee", Tip: "c0ffee"})
		add(muster.Event{Type: muster.EvTaskSucceeded, Task: t.ID, Attempt: 1, Commit: "c0ffee"})
		add(muster.Event{Type: muster.EvExecutorRelease, Task: t.ID, Executor: "sim", Clone: clone})
		if len(batch) > 4096 {
			if err := j.AppendBatch(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := j.AppendBatch(batch); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkResume measures what a resume does before it can decide: read
// a 100,000-event journal and fold it into the engine's state.
func BenchmarkResume(b *testing.B) {
	path := writeBigJournal(b, 100_000)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		evs, err := journal.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		s, err := engine.Replay(evs)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.ReportMetric(float64(len(evs)), "events")
		}
		if !s.Done() {
			b.Fatal("replayed run not done")
		}
	}
}

package journal_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/journal"
)

// writeRun writes a run's journal in runs/id: the plan, then for each
// task a successful attempt whose commit came secs after its start.
func writeRun(t *testing.T, runs, id string, tasks []*muster.Task, secs map[muster.TaskID]float64, mod time.Time) {
	t.Helper()
	dir := filepath.Join(runs, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, journal.FileName)
	j, _, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	evs := []*muster.Event{{Type: muster.EvRunStarted, Run: id, Time: t0}, {Type: muster.EvTasksPlanned, Tasks: tasks, Time: t0}}
	for _, tk := range tasks {
		s, ok := secs[tk.ID]
		if !ok {
			continue
		}
		end := t0.Add(time.Duration(s * float64(time.Second)))
		evs = append(evs,
			&muster.Event{Type: muster.EvTaskStarted, Task: tk.ID, Attempt: 1, Time: t0},
			&muster.Event{Type: muster.EvCommitted, Task: tk.ID, Attempt: 1, Time: end},
			&muster.Event{Type: muster.EvTaskSucceeded, Task: tk.ID, Attempt: 1, Time: end.Add(time.Minute)})
	}
	for _, e := range evs {
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// Durations takes each task's time from its start to its commit (not its
// integration) in the newest earlier run of the same plan (the same
// tasks, IDs, titles and prompts) that ran it to success; the run
// itself, runs of other plans (an edited one included), runs past the
// newest eight and journals that are not regular files or not journals
// give nothing, and never an error.
func TestDurationsFromEarlierRuns(t *testing.T) {
	runs := t.TempDir()
	a := &muster.Task{ID: "a", Title: "A", Prompt: "do a"}
	b := &muster.Task{ID: "b", Title: "B", Prompt: "do b"}
	c := &muster.Task{ID: "c", Title: "C", Prompt: "do c"}
	now := time.Now()
	writeRun(t, runs, "older", []*muster.Task{a, b}, map[muster.TaskID]float64{"a": 9, "b": 9}, now.Add(-3*time.Hour))
	writeRun(t, runs, "old", []*muster.Task{a, b}, map[muster.TaskID]float64{"a": 50}, now.Add(-2*time.Hour))
	writeRun(t, runs, "edited", []*muster.Task{a, {ID: "b", Title: "B", Prompt: "do b, differently"}}, map[muster.TaskID]float64{"a": 3, "b": 99}, now.Add(-time.Hour))
	writeRun(t, runs, "more", []*muster.Task{a, b, c}, map[muster.TaskID]float64{"a": 4, "b": 4, "c": 4}, now.Add(-time.Hour))
	writeRun(t, runs, "self", []*muster.Task{a, b}, map[muster.TaskID]float64{"a": 1000, "b": 1000}, now)
	got := journal.Durations(runs, "self", []*muster.Task{a, b})
	want := map[muster.TaskID]float64{"a": 50, "b": 9}
	if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] {
		t.Fatalf("durations %v, want %v (a from the newest run of the plan, b from the one before, where it last succeeded; the edited plan and the longer one are other plans)", got, want)
	}

	// Hostile or broken entries are passed over: a FIFO (never opened:
	// reading it would hang), a link, garbage; and only the newest
	// eight runs are read.
	if err := os.MkdirAll(filepath.Join(runs, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(runs, "fifo", journal.FileName), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"link", "junk"} {
		if err := os.MkdirAll(filepath.Join(runs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(runs, "old", journal.FileName), filepath.Join(runs, "link", journal.FileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runs, "junk", journal.FileName), []byte("garbage\n{\"seq\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		writeRun(t, runs, "recent"+string(rune('0'+i)), []*muster.Task{c}, nil, now.Add(-time.Duration(i)*time.Minute))
	}
	if got := journal.Durations(runs, "self", []*muster.Task{a, b}); got != nil {
		t.Fatalf("durations %v past the newest eight runs, want none", got)
	}
	if got := journal.Durations(filepath.Join(runs, "missing"), "", []*muster.Task{a}); got != nil {
		t.Fatalf("durations %v from no runs directory", got)
	}
}

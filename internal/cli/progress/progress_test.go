package progress

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
)

var counter = regexp.MustCompile(`\[(\d+)/(\d+)\]`)

// The counter counts finished tasks (succeeded, failed, skipped): never
// [0/0] before the plan is known, not the cancelled ones, and so it does
// not run backwards when a resume takes the interrupted tasks up again.
func TestCounterCountsFinishedTasks(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	seq := int64(0)
	ev := func(e muster.Event) *muster.Event {
		seq++
		e.Seq, e.Time = seq, t0.Add(time.Duration(seq)*time.Second)
		return &e
	}
	cfg := &muster.Config{Executors: []*muster.ExecutorSpec{{Name: "x", Kind: "sim", Clones: 2, Roles: []muster.Role{"coder"}}}}
	st := engine.NewState()
	var out bytes.Buffer
	p := New(&out, false)
	feed := func(evs ...*muster.Event) {
		for _, e := range evs {
			if err := st.Apply(e); err != nil {
				t.Fatalf("%s: %v", e.Type, err)
			}
			p.OnEvent(e, st)
		}
	}
	feed(ev(muster.Event{Type: muster.EvRunStarted, Run: "r", Config: cfg}),
		ev(muster.Event{Type: muster.EvTasksPlanned, Tasks: []*muster.Task{{ID: "a"}, {ID: "b"}, {ID: "c"}}}),
		ev(muster.Event{Type: muster.EvExecutorLeased, Task: "a", Executor: "x", Clone: 1, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskStarted, Task: "a", Attempt: 1, Executor: "x", Clone: 1, Role: "coder"}),
		ev(muster.Event{Type: muster.EvExecutorLeased, Task: "b", Executor: "x", Clone: 2, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskStarted, Task: "b", Attempt: 1, Executor: "x", Clone: 2, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskSucceeded, Task: "a", Attempt: 1}),
		ev(muster.Event{Type: muster.EvExecutorRelease, Task: "a", Executor: "x", Clone: 1, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskCancelled, Task: "b", Attempt: 1, Reason: "interrupted"}),
		ev(muster.Event{Type: muster.EvExecutorRelease, Task: "b", Executor: "x", Clone: 2, Role: "coder"}),
		ev(muster.Event{Type: muster.EvRunInterrupted}),
		ev(muster.Event{Type: muster.EvRunResumed}),
		ev(muster.Event{Type: muster.EvExecutorLeased, Task: "b", Executor: "x", Clone: 1, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskStarted, Task: "b", Attempt: 2, Executor: "x", Clone: 1, Role: "coder"}),
		ev(muster.Event{Type: muster.EvTaskSucceeded, Task: "b", Attempt: 2}),
	)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if strings.Contains(lines[0], "[") {
		t.Errorf("the first line has a counter before the plan is known: %q", lines[0])
	}
	last := 0
	for _, l := range lines[1:] {
		m := counter.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("no counter: %q", l)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if n < last {
			t.Errorf("the counter ran backwards to %d: %q\n%s", n, l, out.String())
		}
		last = n
		if strings.Contains(l, "cancelled") && n != 1 {
			t.Errorf("a cancelled task counted: %q", l)
		}
	}
	if last != 2 {
		t.Errorf("ends at %d, want 2:\n%s", last, out.String())
	}
}

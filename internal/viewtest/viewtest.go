// Package viewtest holds what the tests of the run views (tui,
// htmlreport) share: a journal reader and small event builders on a
// fixed clock.
package viewtest

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

// T0 is when the sample journals start.
var T0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// At returns T0 plus s seconds.
func At(s int) time.Time { return T0.Add(time.Duration(s) * time.Second) }

// Load reads a journal (one JSON event a line), failing the test on a
// bad line with its number.
func Load(t testing.TB, path string) []muster.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []muster.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e muster.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s:%d: %v", path, len(evs)+1, err)
		}
		evs = append(evs, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return evs
}

// Started is a coder's first attempt at task id on clone ex#clone, s
// seconds after T0.
func Started(s int, id muster.TaskID, ex string, clone int) muster.Event {
	return muster.Event{Time: At(s), Type: muster.EvTaskStarted, Task: id, Attempt: 1, Executor: ex, Clone: clone, Role: muster.RoleCoder}
}

// Ended is an event of type typ (TaskSucceeded, TaskFailed, …) ending
// task id, s seconds after T0.
func Ended(s int, typ muster.EventType, id muster.TaskID, reason string) muster.Event {
	return muster.Event{Time: At(s), Type: typ, Task: id, Reason: reason}
}

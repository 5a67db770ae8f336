package journal

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/muster-run/muster"
)

// How long tasks took before: scheduling hints from earlier runs.
//
// A plan run again unchanged (a nightly job, a run started afresh after
// a failed one) has its tasks' durations in the journals of the runs
// before it.
// Started longest first, a crew of independent tasks packs: ordered by
// the plan alone, the long ones that come last leave clones idle at the
// end. The hints are read once, at a run's start, and journaled with the
// plan (TasksPlanned's Expected), so a resume orders as the run did.

// Bounds of what Durations reads: the newest runs first, this many at
// most, journals no larger than this.
const (
	historyRuns     = 8
	historyMaxBytes = 64 << 20
)

// Durations returns, in seconds, how long each task of tasks held its
// clone in the newest earlier run of the same plan in runsDir (the
// directory of run directories, each with its journal) that had it
// succeed with a change: from its attempt's TaskStarted to its last
// Committed. The same plan is the same tasks, each with the same ID,
// title and prompt, wherever its file is: another plan, or this one
// edited, gives no hints, and its tasks start in plan order as before. The run self is not read. A journal that is not a
// regular file, too large, or unreadable is passed over: these are
// hints, never an error.
func Durations(runsDir, self string, tasks []*muster.Task) map[muster.TaskID]float64 {
	want := make(map[muster.TaskID][32]byte, len(tasks))
	for _, t := range tasks {
		want[t.ID] = taskKey(t)
	}
	out := map[muster.TaskID]float64{}
	for _, path := range recentJournals(runsDir, self) {
		events, err := ReadFile(path)
		if err != nil {
			continue
		}
		for id, secs := range durationsIn(events, want) {
			if _, done := out[id]; !done {
				out[id] = secs
			}
		}
		if len(out) == len(want) {
			break
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// taskKey identifies a task across runs: its ID, title and prompt.
func taskKey(t *muster.Task) [32]byte {
	return sha256.Sum256([]byte(string(t.ID) + "\x00" + t.Title + "\x00" + t.Prompt))
}

// recentJournals lists the journals of the newest runs in runsDir but
// self, newest first, at most historyRuns.
func recentJournals(runsDir, self string) []string {
	entries, err := os.ReadDir(runsDir)
	if err != nil {
		return nil
	}
	type found struct {
		path string
		mod  time.Time
	}
	var js []found
	for _, e := range entries {
		if !e.IsDir() || e.Name() == self {
			continue
		}
		p := filepath.Join(runsDir, e.Name(), FileName)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > historyMaxBytes {
			continue
		}
		js = append(js, found{p, fi.ModTime()})
	}
	sort.Slice(js, func(i, j int) bool { return js[i].mod.After(js[j].mod) })
	out := make([]string, 0, min(len(js), historyRuns))
	for _, j := range js[:min(len(js), historyRuns)] {
		out = append(out, j.path)
	}
	return out
}

// durationsIn returns the durations, in seconds, of the tasks of want
// that succeeded with a change in one run's events.
func durationsIn(events []muster.Event, want map[muster.TaskID][32]byte) map[muster.TaskID]float64 {
	type attempt struct {
		task muster.TaskID
		n    int
	}
	planned := map[muster.TaskID][32]byte{}
	same := false // the run's plan is want's
	started := map[attempt]time.Time{}
	committed := map[attempt]time.Time{}
	out := map[muster.TaskID]float64{}
	for i := range events {
		e := &events[i]
		a := attempt{e.Task, e.Attempt}
		switch e.Type {
		case muster.EvTasksPlanned:
			if e.Task != "" {
				continue // a delegator's fragment, not the plan
			}
			for _, t := range e.Tasks {
				planned[t.ID] = taskKey(t)
			}
			if same = samePlan(planned, want); !same {
				return nil
			}
		case muster.EvTaskStarted:
			started[a] = e.Time
		case muster.EvCommitted:
			committed[a] = e.Time
		case muster.EvTaskSucceeded:
			s, c := started[a], committed[a]
			if _, ok := want[e.Task]; !ok || !same || s.IsZero() || c.IsZero() || !c.After(s) {
				continue
			}
			out[e.Task] = c.Sub(s).Seconds()
		}
	}
	return out
}

// samePlan reports whether a run's plan has exactly the tasks of want.
func samePlan(planned, want map[muster.TaskID][32]byte) bool {
	if len(planned) != len(want) {
		return false
	}
	for id, k := range want {
		if planned[id] != k {
			return false
		}
	}
	return true
}

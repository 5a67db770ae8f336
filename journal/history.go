package journal

import (
	"bufio"
	"crypto/sha256"
	"encoding/json"
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
// before it. Started longest first, a crew of independent tasks packs: ordered by
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
// edited, gives no hints, and its tasks start in plan order as before.
// The run self is not read. A journal that is not a regular file, too
// large, or unreadable is passed over: these are hints, never an error.
func Durations(runsDir, self string, tasks []*muster.Task) map[muster.TaskID]float64 {
	want := make(map[muster.TaskID][32]byte, len(tasks))
	for _, t := range tasks {
		want[t.ID] = taskKey(t)
	}
	out := map[muster.TaskID]float64{}
	for _, path := range recentJournals(runsDir, self) {
		for id, secs := range durationsIn(path, want) {
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
// that succeeded with a change in the run whose journal is at path. It
// reads the journal a line at a time and stops at the plan when the plan
// is another (the second line), or at a line that is not an event (what
// came before it still counts).
func durationsIn(path string, want map[muster.TaskID][32]byte) map[muster.TaskID]float64 {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	type attempt struct {
		task muster.TaskID
		n    int
	}
	same := false // the run's plan is want's
	started := map[attempt]time.Time{}
	committed := map[attempt]time.Time{}
	out := map[muster.TaskID]float64{}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		var e muster.Event
		if len(line) == 0 || json.Unmarshal(line, &e) != nil {
			return out
		}
		a := attempt{e.Task, e.Attempt}
		switch {
		case e.Type == muster.EvTasksPlanned && e.Task == "": // the plan, not a delegator's fragment
			if same = samePlan(e.Tasks, want); !same {
				return nil
			}
		case e.Type == muster.EvTaskStarted:
			started[a] = e.Time
		case e.Type == muster.EvCommitted:
			committed[a] = e.Time
		case e.Type == muster.EvTaskSucceeded:
			s, c := started[a], committed[a]
			if _, ok := want[e.Task]; ok && same && !s.IsZero() && c.After(s) {
				out[e.Task] = c.Sub(s).Seconds()
			}
		}
		if err != nil {
			return out
		}
	}
}

// samePlan reports whether a run's plan, tasks, is exactly want's.
func samePlan(tasks []*muster.Task, want map[muster.TaskID][32]byte) bool {
	if len(tasks) != len(want) {
		return false
	}
	seen := make(map[muster.TaskID]bool, len(tasks))
	for _, t := range tasks {
		if k, ok := want[t.ID]; !ok || seen[t.ID] || k != taskKey(t) {
			return false
		}
		seen[t.ID] = true
	}
	return true
}

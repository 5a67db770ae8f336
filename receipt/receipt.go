// Package receipt seals what a run did into receipt.json: the plan's
// hash, the base and final commits, each task's outcome, commit,
// attempts, gates, usage and cost, and a SHA-256 hash chain over the
// journal's lines. Verify checks a receipt against the journal and the
// run branch and names every difference. The package reads no files of
// its own and runs no git: the caller hands it the journal's bytes and
// what the branch holds.
package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/fsync"
)

// FileName is the receipt's name inside a run directory.
const FileName = "receipt.json"

// Version is the receipt format's version.
const Version = 1

// lineDigestLen is how many hex digits of each line's SHA-256 the
// receipt keeps, enough to name an edited line.
const lineDigestLen = 16

// Receipt is a sealed account of a run.
type Receipt struct {
	Version  int       `json:"version"`
	Run      string    `json:"run"`
	Sealed   time.Time `json:"sealed"`
	State    string    `json:"state"`
	Plan     string    `json:"plan"`
	PlanHash string    `json:"plan_hash"`
	// PlanCanon is the version of the plan's canonical form PlanHash was
	// computed with (planfile.CanonicalVersion when the run started);
	// absent in receipts older than the field, which used version 1.
	PlanCanon int    `json:"plan_canon,omitempty"`
	Branch    string `json:"branch"`
	Base      string `json:"base"`
	Final     string `json:"final"`
	// Plans are the versions of the plan a resume adopted after the
	// first (PlanAdopted), in order: each file in the run directory and
	// its hash in the canonical form PlanCanon. Absent when the run
	// kept its first plan, and in receipts older than the field.
	Plans   []PlanVersion `json:"plans,omitempty"`
	Tasks   []Task        `json:"tasks"`
	Usage   muster.Usage  `json:"usage"`
	Journal Chain         `json:"journal"`
}

// PlanVersion is one adopted version of a run's plan.
type PlanVersion struct {
	File string `json:"file"`
	Hash string `json:"hash"`
}

// Canon returns the version of the canonical form the plan hash uses:
// PlanCanon, or 1 for runs recorded before the version was.
func (r *Receipt) Canon() int {
	if r.PlanCanon == 0 {
		return 1
	}
	return r.PlanCanon
}

// Task is one task's outcome.
type Task struct {
	ID       muster.TaskID    `json:"id"`
	Parent   muster.TaskID    `json:"parent,omitempty"`
	State    muster.TaskState `json:"state"`
	Reason   string           `json:"reason,omitempty"`
	Commit   string           `json:"commit,omitempty"`
	Attempts int              `json:"attempts"`
	Gates    []Gate           `json:"gates,omitempty"`
	Usage    muster.Usage     `json:"usage"`
}

// Gate is one gate run of a task.
type Gate struct {
	Name    string `json:"name"`
	Attempt int    `json:"attempt,omitempty"`
	Round   int    `json:"round"`
	Passed  bool   `json:"passed"`
	// Phase is "integration" for a run on the merged tree.
	Phase string `json:"phase,omitempty"`
	// NotCharged marks a failure that was not the task's: the gate fails
	// on its base too (pre-existing).
	NotCharged bool `json:"not_charged,omitempty"`
}

// Chain seals the journal: h_0 is 32 zero bytes and h_i =
// SHA-256(h_{i-1} || line_i) over each complete line without its newline;
// Hash is h_Lines in hex. LineDigests holds the first hex digits of each
// line's own SHA-256, so that Verify can name the lines that changed.
type Chain struct {
	Lines       int      `json:"lines"`
	Hash        string   `json:"hash"`
	LineDigests []string `json:"line_digests"`
}

// Input is what Seal needs besides the journal.
type Input struct {
	PlanHash string // planfile.Hash of the plan as written
	// HashPlan, when set, gives the plan's hash in a version of its
	// canonical form; Seal calls it with the version the run recorded
	// (and PlanHash is then unused).
	HashPlan func(canon int) string
	Final    string    // the run branch's tip
	Now      time.Time // when the receipt is sealed
}

// lines splits a journal into its complete lines (a torn last line,
// without its newline, is not part of the journal).
func lines(journal []byte) [][]byte {
	var out [][]byte
	for len(journal) > 0 {
		i := bytes.IndexByte(journal, '\n')
		if i < 0 {
			break
		}
		out = append(out, journal[:i])
		journal = journal[i+1:]
	}
	return out
}

// ChainOf computes the hash chain of a journal's bytes.
func ChainOf(journal []byte) Chain {
	ls := lines(journal)
	c := Chain{Lines: len(ls), LineDigests: make([]string, len(ls))}
	h := make([]byte, sha256.Size)
	buf := make([]byte, 0, 4096)
	for i, l := range ls {
		buf = append(append(buf[:0], h...), l...)
		sum := sha256.Sum256(buf)
		h = sum[:]
		ld := sha256.Sum256(l)
		c.LineDigests[i] = hex.EncodeToString(ld[:])[:lineDigestLen]
	}
	c.Hash = hex.EncodeToString(h)
	return c
}

// decode decodes a journal's complete lines into events; the error names
// the first line that is not an event.
func decode(journal []byte) ([]muster.Event, error) {
	ls := lines(journal)
	events := make([]muster.Event, 0, len(ls))
	for i, l := range ls {
		var e muster.Event
		if err := json.Unmarshal(l, &e); err != nil {
			return nil, fmt.Errorf("journal line %d: not an event: %w", i+1, err)
		}
		events = append(events, e)
	}
	return events, nil
}

// Seal builds the receipt of a run from its journal's bytes.
func Seal(journal []byte, in Input) (*Receipt, error) {
	events, err := decode(journal)
	if err != nil {
		return nil, err
	}
	r := Fold(events)
	r.Version, r.PlanHash, r.Final, r.Sealed = Version, in.PlanHash, in.Final, in.Now.UTC()
	if in.HashPlan != nil {
		r.PlanHash = in.HashPlan(r.Canon())
	}
	r.Journal = ChainOf(journal)
	return r, nil
}

// Fold derives the run's outcome from its events: everything of a
// receipt but the plan hash, the final commit, the seal time and the
// chain.
func Fold(events []muster.Event) *Receipt {
	f := &folder{r: &Receipt{Tasks: []Task{}}, idx: map[muster.TaskID]int{}}
	for i := range events {
		e := &events[i]
		switch e.Type {
		case muster.EvRunStarted, muster.EvRunResumed, muster.EvRunFinished, muster.EvRunInterrupted:
			f.run(e)
		case muster.EvTasksPlanned, muster.EvPlanAdopted:
			f.plan(e)
		default:
			f.task(e)
		}
	}
	if f.r.State == muster.RunRunning {
		// Sealed without an end in the journal: the process stopped.
		f.r.State = muster.RunInterrupted
	}
	return f.r
}

// folder is Fold's receipt under construction and its tasks by ID.
type folder struct {
	r   *Receipt
	idx map[muster.TaskID]int
}

func (f *folder) get(id muster.TaskID) *Task {
	if i, ok := f.idx[id]; ok {
		return &f.r.Tasks[i]
	}
	return nil
}

// run folds the run's own events: started, resumed, ended.
func (f *folder) run(e *muster.Event) {
	r := f.r
	switch e.Type {
	case muster.EvRunStarted:
		r.Run, r.Plan, r.Base, r.Branch, r.State = e.Run, e.Plan, e.Base, e.Branch, muster.RunRunning
	case muster.EvRunResumed:
		r.State = muster.RunRunning
	case muster.EvRunFinished:
		r.State = e.State
	case muster.EvRunInterrupted:
		r.State = muster.RunInterrupted
	}
}

// plan folds the plan's tasks, a delegator's fragment and each adopted
// version of the plan (whose hash the receipt seals): tasks new to the
// run join it.
func (f *folder) plan(e *muster.Event) {
	r := f.r
	if e.Type == muster.EvPlanAdopted {
		r.Plans = append(r.Plans, PlanVersion{File: e.Plan, Hash: e.PlanHash})
	} else if e.Task == "" && r.PlanCanon == 0 {
		r.PlanCanon = e.Canon
	}
	for _, t := range e.Tasks {
		if t == nil {
			continue
		}
		if _, dup := f.idx[t.ID]; dup {
			continue
		}
		f.idx[t.ID] = len(r.Tasks)
		st := muster.StatePending
		if t.Done {
			st = muster.StateSucceeded
		}
		r.Tasks = append(r.Tasks, Task{ID: t.ID, Parent: e.Task, State: st})
	}
}

// task folds the events of a task's attempts and its end.
func (f *folder) task(e *muster.Event) {
	t := f.get(e.Task)
	if e.Type == muster.EvTokensUsed && e.Counted() {
		f.r.Usage.Add(e.Credited())
	}
	if t == nil {
		return
	}
	switch e.Type {
	case muster.EvTaskStarted:
		t.State, t.Attempts, t.Reason = muster.StateRunning, e.Attempt, ""
	case muster.EvGateRan:
		t.Gates = append(t.Gates, Gate{Name: e.Gate, Attempt: e.Attempt, Round: e.Round, Passed: e.Passed != nil && *e.Passed,
			Phase: e.Phase, NotCharged: e.Uncharged()})
	case muster.EvTokensUsed:
		if e.Counted() { // not an agent's claim beside the provider's numbers
			t.Usage.Add(e.Credited())
		}
	case muster.EvIntegrated:
		t.Commit = e.Commit
	case muster.EvTaskReopened:
		t.State, t.Reason = muster.StatePending, ""
	case muster.EvTaskSucceeded:
		t.State, t.Reason = muster.StateSucceeded, e.Reason
		if e.Commit != "" {
			t.Commit = e.Commit
		}
	case muster.EvTaskFailed:
		t.State, t.Reason = muster.StateFailed, e.Reason
		if e.Retry {
			t.State = muster.StatePending
		}
	case muster.EvTaskSkipped:
		t.State, t.Reason = muster.StateSkipped, e.Reason
	case muster.EvTaskCancelled:
		t.State, t.Reason = muster.StateCancelled, e.Reason
	}
}

// Write writes the receipt into dir atomically (a temporary file, synced,
// then renamed over receipt.json, then the directory synced so that the
// rename is durable).
func (r *Receipt) Write(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return fsync.WriteFile(filepath.Join(dir, FileName), append(b, '\n'), 0o644)
}

// Read reads dir's receipt.json.
func Read(dir string) (*Receipt, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	var r Receipt
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, FileName), err)
	}
	return &r, nil
}

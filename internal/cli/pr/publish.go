package pr

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/muster-run/muster/internal/fsync"
)

// PublishFile is the record of what `muster pr` pushed and opened, beside
// the run's journal (ARCHITECTURE.md §8.3): append-only, each line
// fsynced, never part of the journal and never sealed, so the receipt
// verifies whatever was published. The forge is the truth about pull
// requests (a rerun finds its pull request by its head branch); the file
// says what this repository did, and when.
const PublishFile = "publish.jsonl"

// Operations of a publish record.
const (
	opPushed   = "pushed"   // Branch at Commit on Remote
	opOpened   = "opened"   // pull request Number
	opUpdated  = "updated"  // pull request Number, body and base set again
	opReopened = "reopened" // a closed pull request opened again
	opMerged   = "merged"   // already merged: left alone
	opTaken    = "taken"    // feedback Key given to Task as follow-up Number (before the resume that acts on it)
)

// record is one line of publish.jsonl.
type record struct {
	Time   time.Time `json:"time"`
	Op     string    `json:"op"`
	Remote string    `json:"remote,omitempty"`
	Repo   string    `json:"repo,omitempty"`
	Branch string    `json:"branch,omitempty"`
	Commit string    `json:"commit,omitempty"`
	Base   string    `json:"base,omitempty"`
	Number int       `json:"number,omitempty"`
	URL    string    `json:"url,omitempty"`
	Task   string    `json:"task,omitempty"`
	// Key (taken) names the feedback a follow-up took: check:NAME@SHA,
	// comment:ID, review:ID; Number is then the follow-up's.
	Key string `json:"key,omitempty"`
}

// publishLog appends records to a run directory's publish.jsonl.
type publishLog struct {
	path string
	now  func() time.Time
}

// add appends r and syncs it before returning: a record is on disk
// before muster does the next thing. The file is never followed through
// a link.
func (l *publishLog) add(r record) error {
	r.Time = l.now().UTC()
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, statErr := os.Lstat(l.path)
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("record in %s: %w", l.path, err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("record in %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("record in %s: %w", l.path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		return fsync.Dir(filepath.Dir(l.path))
	}
	return nil
}

// readPublish reads a publish.jsonl; a torn last line (a crash
// mid-write) is skipped, and a missing file is no records.
func readPublish(path string) ([]record, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

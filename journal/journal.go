// Package journal keeps a run's events as JSON lines in an append-only
// file. Append writes and fsyncs a line before it returns, so an event is
// durable before the state changes on it. A torn last line, left by a
// crash mid-write, is detected and cut off when the journal is opened.
package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/fsync"
)

// FileName is the journal's name inside a run directory.
const FileName = "journal.jsonl"

// Journal is an open journal file, held with an exclusive lock so that
// two processes never append to the same run. The lock is an flock: the
// kernel drops it when the process dies, however it dies.
type Journal struct {
	mu   sync.Mutex
	path string
	f    *os.File
	seq  int64
	buf  []byte // the lines of the append under way
	sync bool
}

// ErrLocked is returned by Open when another live process holds the run.
var ErrLocked = errors.New("run is in use by another muster process")

// ErrVanished is returned (wrapped) by Sync, Append and Check when the
// journal's file no longer has a name: its run directory was deleted, or
// the file itself, while the run went on. Events written to it are lost
// to every later reader, so the run must stop.
var ErrVanished = errors.New("the journal file was deleted while the run went on (was its run directory removed?)")

// Options tune Open.
type Options struct {
	// NoSync skips fsync (benchmarks and tests of throughput only).
	NoSync bool
}

// Open opens (creating if needed) the journal at path for appending,
// takes its lock, replays it to find the next sequence number, and cuts
// off a torn last line. It returns the events already in the file.
func Open(path string, opts Options) (*Journal, []muster.Event, error) {
	_, statErr := os.Lstat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open journal: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) && !opts.NoSync {
		// A new journal's name, and its run directory's, must survive a
		// crash as its lines do.
		dir := filepath.Dir(path)
		if err := errors.Join(fsync.Dir(dir), fsync.Dir(filepath.Dir(dir))); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("open journal: %w", err)
		}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil, ErrLocked
		}
		return nil, nil, fmt.Errorf("lock journal: %w", err)
	}
	events, valid, err := Read(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if valid < st.Size() {
		// A torn tail: cut it off and make the cut durable.
		if err := f.Truncate(valid); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("repair journal: %w", err)
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	if _, err := f.Seek(valid, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	j := &Journal{f: f, sync: !opts.NoSync, path: path}
	if n := len(events); n > 0 {
		j.seq = events[n-1].Seq
	}
	return j, events, nil
}

// Append assigns e the next sequence number, writes it as one line and
// fsyncs. The caller sets Time.
func (j *Journal) Append(e *muster.Event) error {
	return j.append([]*muster.Event{e}, true)
}

// Write appends events without syncing them: they are durable after the
// next Sync. The driver writes as it goes and syncs once before anything
// outside the process depends on what it wrote (group commit).
func (j *Journal) Write(es []*muster.Event) error {
	return j.append(es, false)
}

// Sync makes every written event durable.
func (j *Journal) Sync() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal is closed")
	}
	if !j.sync {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync journal: %w", err)
	}
	return j.linked()
}

// Check fails with ErrVanished when the journal's file no longer has a
// name (see ErrVanished). The run checks it after every sync and before
// it seals the receipt.
func (j *Journal) Check() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal is closed")
	}
	return j.linked()
}

func (j *Journal) linked() error {
	ok, err := fsync.Linked(j.f)
	if err != nil {
		return fmt.Errorf("check journal: %w", err)
	}
	if !ok {
		return fmt.Errorf("%s: %w", j.path, ErrVanished)
	}
	return nil
}

// AppendBatch appends several events with one fsync (group commit). The
// events are durable together when it returns; a crash mid-batch leaves a
// prefix of them, which replay handles like any torn tail.
func (j *Journal) AppendBatch(es []*muster.Event) error {
	return j.append(es, true)
}

func (j *Journal) append(es []*muster.Event, sync bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal is closed")
	}
	b := j.buf[:0]
	seq := j.seq
	for _, e := range es {
		seq++
		e.Seq = seq
		var err error
		if b, err = appendLine(b, e); err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
	}
	if cap(b) <= maxKeptBuf {
		j.buf = b
	}
	if _, err := j.f.Write(b); err != nil {
		return fmt.Errorf("append to journal: %w", err)
	}
	j.seq = seq
	if sync && j.sync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("sync journal: %w", err)
		}
		return j.linked()
	}
	return nil
}

// maxKeptBuf bounds the line buffer a journal keeps between appends (a
// larger one, of a batch of large events, is left to the collector).
const maxKeptBuf = 1 << 20

// Seq returns the sequence number of the last event.
func (j *Journal) Seq() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seq
}

// Close releases the lock and closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// Read decodes every complete, valid line of r. It returns the events
// and the byte length of the valid prefix. A final line without its
// newline, or one that is not a valid event, ends the valid prefix when
// it is the last line (a torn write); a bad line followed by good ones is
// corruption and an error naming the line.
func Read(r io.Reader) ([]muster.Event, int64, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var events []muster.Event
	var valid int64
	lineNo := 0
	var pendingErr error
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			lineNo++
			if pendingErr != nil {
				return nil, 0, pendingErr
			}
			complete := line[len(line)-1] == '\n'
			var e muster.Event
			if !complete {
				// Torn tail: not terminated; ignore it.
				break
			}
			if derr := json.Unmarshal(line, &e); derr != nil || e.Type == "" || e.Seq != int64(len(events))+1 {
				msg := "not a journal event"
				if derr != nil {
					msg = derr.Error()
				} else if e.Type != "" {
					msg = fmt.Sprintf("sequence %d, want %d", e.Seq, len(events)+1)
				}
				pendingErr = fmt.Errorf("journal line %d: %s", lineNo, msg)
				continue
			}
			events = append(events, e)
			valid += int64(len(line))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, err
		}
	}
	return events, valid, nil
}

// ReadFile reads a journal without locking it (for status, reports,
// watch): the torn tail of a live or crashed run is ignored.
func ReadFile(path string) ([]muster.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, _, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

// Locked reports whether a live process holds the journal's lock.
func Locked(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

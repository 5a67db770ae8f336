package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func appendN(t *testing.T, j *Journal, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		e := &muster.Event{Time: time.Unix(int64(i), 0).UTC(), Type: muster.EvTaskStarted, Task: muster.TaskID("t"), Attempt: i + 1}
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, evs, err := Open(path, Options{})
	if err != nil || len(evs) != 0 {
		t.Fatal(err, evs)
	}
	appendN(t, j, 5)
	if j.Seq() != 5 {
		t.Fatalf("seq %d", j.Seq())
	}
	j.Close()
	j, evs, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 5 || evs[4].Seq != 5 || evs[4].Attempt != 5 {
		t.Fatalf("events %+v", evs)
	}
	appendN(t, j, 1)
	j.Close()
	evs, err = ReadFile(path)
	if err != nil || len(evs) != 6 || evs[5].Seq != 6 {
		t.Fatalf("%v %d", err, len(evs))
	}
}

func TestLockExcludesSecondWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, _, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !Locked(path) {
		t.Fatal("want locked")
	}
	if _, _, err := Open(path, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	j.Close()
	if Locked(path) {
		t.Fatal("lock kept after close")
	}
}

// Cutting the file at every byte offset must recover the longest valid
// prefix, and appending afterwards must continue the sequence.
func TestTornTailEveryOffset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	j, _, _ := Open(path, Options{NoSync: true})
	appendN(t, j, 4)
	j.Close()
	full, _ := os.ReadFile(path)
	var ends []int
	for i, b := range full {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	for cut := 0; cut <= len(full); cut++ {
		p := filepath.Join(dir, "cut.jsonl")
		os.WriteFile(p, full[:cut], 0o644)
		want := 0
		for _, e := range ends {
			if e <= cut {
				want++
			}
		}
		j, evs, err := Open(p, Options{NoSync: true})
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if len(evs) != want {
			t.Fatalf("cut %d: %d events, want %d", cut, len(evs), want)
		}
		appendN(t, j, 1)
		j.Close()
		evs, err = ReadFile(p)
		if err != nil || len(evs) != want+1 || evs[want].Seq != int64(want+1) {
			t.Fatalf("cut %d after append: %v %d", cut, err, len(evs))
		}
	}
}

func TestCorruptMiddleIsError(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, _, _ := Open(path, Options{NoSync: true})
	appendN(t, j, 3)
	j.Close()
	b, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(b, []byte("\n"))
	lines[1] = []byte("{garbage}\n")
	os.WriteFile(path, bytes.Join(lines, nil), 0o644)
	if _, _, err := Open(path, Options{}); err == nil {
		t.Fatal("want error for corrupt middle line")
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"seq":1,"time":"2026-01-01T00:00:00Z","type":"RunStarted"}` + "\n"))
	f.Add([]byte("{\"seq\":1,\"type\":\"X\"}\n{\"seq\":3"))
	f.Add([]byte("\n\n\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, valid, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		if valid > int64(len(data)) {
			t.Fatalf("valid %d > len %d", valid, len(data))
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("seq %d at %d", e.Seq, i)
			}
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	path := filepath.Join(b.TempDir(), FileName)
	j, _, _ := Open(path, Options{})
	defer j.Close()
	e := &muster.Event{Type: muster.EvTokensUsed, Task: "task-1", Executor: "claude", Clone: 2, Model: "claude-sonnet-4-5"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Time = time.Unix(int64(i), 0)
		if err := j.Append(e); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAppendBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	j, _, _ := Open(path, Options{})
	appendN(t, j, 1)
	batch := []*muster.Event{{Type: muster.EvNote}, {Type: muster.EvWarning}}
	if err := j.AppendBatch(batch); err != nil {
		t.Fatal(err)
	}
	if batch[1].Seq != 3 || j.Seq() != 3 {
		t.Fatalf("seqs %d %d", batch[1].Seq, j.Seq())
	}
	j.Close()
	evs, err := ReadFile(path)
	if err != nil || len(evs) != 3 || evs[2].Type != muster.EvWarning {
		t.Fatalf("%v %+v", err, evs)
	}
}

// A run directory deleted while the run goes on: the journal's next sync
// (and Check) fails with ErrVanished instead of writing to a file no one
// will ever read.
func TestSyncFailsWhenTheJournalVanished(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "r1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	j, _, err := Open(filepath.Join(dir, FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Append(&muster.Event{Type: muster.EvRunStarted}); err != nil {
		t.Fatal(err)
	}
	if err := j.Check(); err != nil {
		t.Fatalf("check of a linked journal: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(&muster.Event{Type: muster.EvWarning}); !errors.Is(err, ErrVanished) {
		t.Errorf("append after the run dir was removed: %v, want ErrVanished", err)
	}
	if err := j.Write([]*muster.Event{{Type: muster.EvWarning}}); err != nil {
		t.Fatal(err)
	}
	if err := j.Sync(); !errors.Is(err, ErrVanished) {
		t.Errorf("sync: %v, want ErrVanished", err)
	}
	if err := j.Check(); !errors.Is(err, ErrVanished) {
		t.Errorf("check: %v, want ErrVanished", err)
	}
}

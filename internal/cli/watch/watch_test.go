package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-run/muster"
)

func sample(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func line(t *testing.T, e muster.Event) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestFollowTornAndAppended writes a journal in pieces, cutting a line in
// two, and checks that Follow delivers each event once, in order, and
// stops at the run's end.
func TestFollowTornAndAppended(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var all []byte
	for i, typ := range []muster.EventType{muster.EvRunStarted, muster.EvWarning, muster.EvRunInterrupted, muster.EvRunResumed, muster.EvNote, muster.EvRunFinished} {
		all = append(all, line(t, muster.Event{Seq: int64(i + 1), Time: t0, Type: typ, Message: "m"})...)
	}
	// The first write ends inside the second line.
	cut := bytes.IndexByte(all, '\n') + 10
	if err := os.WriteFile(path, all[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	out := make(chan muster.Event, 16)
	done := make(chan error, 1)
	go func() { done <- Follow(context.Background(), path, time.Millisecond, out) }()

	if e := <-out; e.Seq != 1 {
		t.Fatalf("first event seq %d", e.Seq)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Complete the torn line and add the rest one byte-range at a time.
	for _, part := range [][]byte{all[cut : cut+5], all[cut+5:]} {
		if _, err := f.Write(part); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Follow: %v", err)
	}
	close(out)
	var seqs []int64
	for e := range out {
		seqs = append(seqs, e.Seq)
	}
	// RunInterrupted at seq 3 is followed by a resume: Follow goes on to 6.
	if want := []int64{2, 3, 4, 5, 6}; !equal(seqs, want) {
		t.Errorf("seqs %v, want %v", seqs, want)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFollowBadLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(path, []byte("{\"seq\":1,\"type\":\"RunStarted\"}\n{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Follow(context.Background(), path, time.Millisecond, make(chan muster.Event, 4))
	if err == nil || !strings.Contains(err.Error(), "journal.jsonl:2:") {
		t.Errorf("got %v, want an error naming journal.jsonl:2", err)
	}
}

func TestFollowStopsWithContext(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(path, sample(t)[:200], 0o644); err != nil { // a run still going
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stop")
	cancel(stop)
	if err := Follow(ctx, path, time.Millisecond, make(chan muster.Event, 4)); !errors.Is(err, stop) {
		t.Errorf("got %v, want the context's cause", err)
	}
}

func TestWatchCommandPlain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(path, sample(t), 0o644); err != nil {
		t.Fatal(err)
	}
	var asked string
	cmd := NewCmd(func(_, run string) (string, error) { asked = run; return path, nil })
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetArgs([]string{"20261129-demo01"}) // a buffer is no terminal: plain lines
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("watch: %v\n%s", err, out.String())
	}
	if asked != "20261129-demo01" {
		t.Errorf("resolve got %q", asked)
	}
	for _, want := range []string{"   0.0s run 20261129-demo01 on branch", "  1m53s [1/8] ✓ schema done in 1m53s commit e50db025ed", "[8/8] ✗ e2e failed: stalemate", " 10m49s [8/8] run failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestWatchCommandErrors(t *testing.T) {
	t.Parallel()
	cmd := NewCmd(func(string, string) (string, error) { return "", muster.Errorf(muster.CodeInvalid, "no run named x") })
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"x"})
	if err := cmd.Execute(); err == nil || muster.ErrorCode(err) != muster.CodeInvalid {
		t.Errorf("got %v, want the resolver's error", err)
	}
	cmd = NewCmd(func(string, string) (string, error) { return filepath.Join(t.TempDir(), "missing.jsonl"), nil })
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--plain"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("got %v, want an error naming the journal", err)
	}
}

// TestWatchLiveViewOnPipes drives the live view without a terminal: the
// journal is complete, so the view ends by itself.
func TestWatchLiveViewOnPipes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	if err := os.WriteFile(path, sample(t), 0o644); err != nil {
		t.Fatal(err)
	}
	live := true
	var out bytes.Buffer
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer r.Close()
	if err := Run(context.Background(), &Options{Journal: path, In: r, Out: &out, TUI: &live}); err != nil {
		t.Fatalf("watch: %v", err)
	}
	if !strings.Contains(out.String(), "[7/8]") {
		t.Errorf("no summary:\n%s", out.String())
	}
}

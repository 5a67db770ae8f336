package git

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestHoldersReadsTheClonesNotes: each clone's lock names its last
// holder as "PID.START", once; an old note without a start time, a
// damaged one, a link and a FIFO (which must not block the read) name
// none.
func TestHoldersReadsTheClonesNotes(t *testing.T) {
	dir := t.TempDir()
	for name, note := range map[string]string{
		"1.lock": "pid 41 start 9001 run a since 2026-12-03T16:00:00Z\n",
		"2.lock": "pid 41 start 9001 run b since 2026-12-03T16:01:00Z\n",
		"3.lock": "pid 42 start 7 run c since 2026-12-03T16:02:00Z\n",
		"4.lock": "pid 43 run old since 2026-12-01T10:00:00Z\n",
		"5.lock": "pid x start y\n",
		"6.lock": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(note), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "3.lock"), filepath.Join(dir, "7.lock")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "8.lock"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { done <- holdersIn(dir) }()
	select {
	case got := <-done:
		slices.Sort(got)
		if want := []string{"41.9001", "42.7"}; !slices.Equal(got, want) {
			t.Fatalf("holders %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading the notes blocked (on the FIFO)")
	}
}

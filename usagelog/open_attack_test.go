package usagelog

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestForEachLineOpensRegularFilesOnly: `muster usage` reads the session
// logs in the agent homes of muster's runs, which the agents wrote. A
// process an agent left behind (without namespaces nothing ends it) can
// swap a log it listed as a regular file for a FIFO or a link before it
// is opened: the read neither blocks on the FIFO (the test would hang)
// nor follows the link; both count as unreadable.
func TestForEachLineOpensRegularFilesOnly(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.jsonl")
	if err := os.WriteFile(secret, []byte(`{"secret":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, link} {
		var buf []byte
		var st Stats
		lines := 0
		err := forEachLine(p, 0, 1<<20, 1<<16, &buf, &st, func([]byte) { lines++ })
		if err == nil || lines != 0 {
			t.Errorf("%s: read %d lines (%v), want refused", filepath.Base(p), lines, err)
		}
	}
}

package gate

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster/internal/exchange"
)

// MaxJUnit bounds the JUnit XML a gate's result keeps.
const MaxJUnit = 1 << 20

// junitFiles are the files of glob (relative to dir) that lie inside dir.
func junitFiles(dir, glob string) []string {
	if glob == "" || filepath.IsAbs(glob) || strings.HasPrefix(filepath.Clean(glob), "..") {
		return nil
	}
	m, _ := filepath.Glob(filepath.Join(dir, glob))
	return m
}

// clearJUnit removes the reports a previous run of the gate left, so
// that what is read afterwards is this run's: regular files only, found
// and removed through a root opened on dir (the glob follows a link an
// agent made of a directory on the way; the removal never does).
func clearJUnit(dir, glob string) {
	files := junitFiles(dir, glob)
	if len(files) == 0 {
		return
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer r.Close()
	for _, f := range files {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			continue
		}
		if fi, err := r.Lstat(rel); err == nil && fi.Mode().IsRegular() {
			_ = r.Remove(rel)
		}
	}
}

// readJUnit returns the reports the gate wrote, concatenated and bounded
// (regular files only: a symlink out of the clone is not followed).
func readJUnit(dir, glob string) string {
	var b strings.Builder
	for _, f := range junitFiles(dir, glob) {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			continue
		}
		// The clone is the agents' too: read through internal/exchange (no
		// link followed, a FIFO never waited on, checked by fstat).
		data, err := exchange.ReadFile(dir, rel, MaxJUnit-int64(b.Len()))
		if err == nil && data != nil {
			b.Write(data)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

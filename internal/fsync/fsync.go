// Package fsync makes directory entries durable: a file created or
// renamed into a directory survives a crash only once the directory
// itself is synced (as litestream's file replica does after a rename).
package fsync

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Dir fsyncs the directory dir, so that the entries created, renamed or
// removed in it are durable.
func Dir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		// EINVAL: a file system that cannot sync directories.
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Linked reports whether the open file f still has a name (its link
// count is above zero): a file whose directory was deleted, or that was
// itself unlinked, is still writable but will never be found again.
func Linked(f *os.File) (bool, error) {
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Nlink > 0, nil
	}
	return true, nil
}

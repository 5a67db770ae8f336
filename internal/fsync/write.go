package fsync

import (
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically, the one way muster replaces a
// file it keeps: a temporary file beside it with mode perm, synced, renamed
// over path, then the directory synced so that the rename is durable. A
// reader sees the old file or the new one, never part of one; a crash
// leaves at most the temporary file behind.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return Dir(dir)
}

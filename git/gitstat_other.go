//go:build !linux && !darwin

package git

import "io/fs"

// fileID is not known here: a clone's .git is made afresh at every reset.
func fileID(fs.FileInfo) (ino, nlink uint64, ctime int64, ok bool) { return 0, 0, 0, false }

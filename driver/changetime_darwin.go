package driver

import (
	"fmt"
	"io/fs"
	"syscall"
)

// changeStamp is an entry's inode number and inode change time: a write,
// chmod or link changes it, and no unprivileged program can set it back
// (touch -r restores only the modification time).
func changeStamp(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", st.Ino, st.Ctimespec.Sec, st.Ctimespec.Nsec)
}

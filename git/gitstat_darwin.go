package git

import (
	"io/fs"
	"syscall"
)

// fileID is what no process can set back on a file: its inode, link
// count and change time (ns).
func fileID(fi fs.FileInfo) (ino, nlink uint64, ctime int64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, false
	}
	return st.Ino, uint64(st.Nlink), st.Ctimespec.Nano(), true
}

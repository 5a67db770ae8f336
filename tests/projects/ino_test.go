package projects_test

import (
	"fmt"
	"os"
	"syscall"
)

func sysIno(fi os.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf(" ino %d", st.Ino)
	}
	return ""
}

//go:build linux || darwin

package git

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readGitSig reads the record of the clone's .git through root; false
// when it is not a directory or holds more than maxGitEntries entries.
// It walks by descriptor: each directory is opened once, below the one
// before it and never through a link, and each entry is lstat-ed
// relative to it (a lookup through root opens every element of the
// path again: two walks a task cost about 0.6 ms of CPU that way).
func readGitSig(root *os.Root) (gitDirSig, bool) {
	top, err := root.Open(".")
	if err != nil {
		return nil, false
	}
	defer top.Close()
	sig := gitDirSig{}
	if !walkGitAt(int(top.Fd()), ".git", ".git", sig) {
		return nil, false
	}
	return sig, true
}

// walkGitAt records the entry name of the directory parent under rel,
// and everything below it when it is a directory. .git itself must be
// one.
func walkGitAt(parent int, name, rel string, sig gitDirSig) bool {
	if len(sig) >= maxGitEntries {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false
	}
	sig[rel] = gitEntryOf(&st)
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR { //nolint:unconvert // uint16 on darwin
		return rel != ".git"
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	d := os.NewFile(uintptr(fd), rel)
	defer d.Close()
	// The directory walked is the one recorded: replaced in between,
	// there is no record.
	var opened unix.Stat_t
	if unix.Fstat(fd, &opened) != nil || opened.Ino != st.Ino || opened.Dev != st.Dev {
		return false
	}
	names, err := d.Readdirnames(maxGitEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	for _, n := range names {
		if !walkGitAt(fd, n, rel+"/"+n, sig) {
			return false
		}
	}
	return true
}

// gitEntryOf is the record of an entry as lstat gave it; its mode holds
// the kind and permission bits as os.Lstat would give them.
func gitEntryOf(st *unix.Stat_t) gitEntry {
	m := uint32(st.Mode) //nolint:unconvert // uint16 on darwin
	mode := fs.FileMode(m & 0o777)
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFREG:
	default:
		mode |= fs.ModeIrregular
	}
	return gitEntry{mode: mode, ino: uint64(st.Ino), nlink: uint64(st.Nlink), size: st.Size, //nolint:unconvert // narrower on darwin
		ctime: unix.TimespecToNsec(st.Ctim)}
}

//go:build linux

package git

import (
	"encoding/binary"
	"errors"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// watcher records the paths touched in a worktree with inotify, so that
// muster can restage and reset only those instead of reading all the
// files' metadata. Anything it cannot account for (a lost event, a moved
// directory, a watch it could not add) marks it bad: the caller then
// falls back to a full scan and starts a new watcher.
type watcher struct {
	fd   int
	root string
	wds  map[int32]string // watch descriptor -> directory, relative ("" = root)
	buf  []byte
	bad  bool
	// events counts the events read so far.
	events int64
}

const watchMask = syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE |
	syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
	syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR | syscall.IN_DONT_FOLLOW |
	syscall.IN_EXCL_UNLINK

// newWatcher watches every directory of the worktree at root (nested
// .git directories excepted).
func newWatcher(root string) (*watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &watcher{fd: fd, root: root, wds: map[int32]string{}, buf: make([]byte, 64<<10)}
	if err := w.addTree("", nil); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *watcher) close() {
	if w != nil && w.fd >= 0 {
		syscall.Close(w.fd)
		w.fd = -1
	}
}

// addTree watches the directory rel and every directory below it, and
// reports each path found below it.
func (w *watcher) addTree(rel string, found func(string)) error {
	wd, err := syscall.InotifyAddWatch(w.fd, filepath.Join(w.root, filepath.FromSlash(rel)), watchMask)
	if err != nil {
		return err
	}
	w.wds[int32(wd)] = rel
	ents, err := os.ReadDir(filepath.Join(w.root, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == ".git" {
			if rel != "" && found != nil {
				found(path.Join(rel, e.Name())) // a nested repository: the caller scans fully
			}
			continue
		}
		p := path.Join(rel, e.Name())
		if found != nil {
			found(p)
		}
		if e.IsDir() {
			if err := w.addTree(p, found); err != nil {
				return err
			}
		}
	}
	return nil
}

// drain reads every event queued so far (the kernel queues them when the
// change happens, so after a process exits all its changes are queued)
// and adds the paths touched to touched. It reports whether the record
// is still complete.
func (w *watcher) drain(touched map[string]bool) bool {
	if w == nil || w.bad {
		return false
	}
	for {
		n, err := syscall.Read(w.fd, w.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EAGAIN) {
			break
		}
		if err != nil || n <= 0 {
			w.bad = true
			break
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			b := w.buf[off:]
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			nameLen := int(binary.NativeEndian.Uint32(b[12:]))
			name := b[syscall.SizeofInotifyEvent : syscall.SizeofInotifyEvent+nameLen]
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			w.events++
			w.event(wd, mask, string(name), touched)
			off += syscall.SizeofInotifyEvent + nameLen
		}
	}
	return !w.bad
}

func (w *watcher) event(wd int32, mask uint32, name string, touched map[string]bool) {
	if mask&syscall.IN_Q_OVERFLOW != 0 {
		w.bad = true
		return
	}
	if mask&syscall.IN_IGNORED != 0 {
		delete(w.wds, wd)
		return
	}
	dir, ok := w.wds[wd]
	if !ok {
		w.bad = true
		return
	}
	if mask&syscall.IN_MOVE_SELF != 0 || mask&syscall.IN_DELETE_SELF != 0 && dir == "" {
		w.bad = true // a watched directory moved: the map is stale
		return
	}
	if name == "" {
		return // the directory's own metadata: nothing git records
	}
	p := path.Join(dir, name)
	if p == ".git" {
		return // the worktree's link; Prepare checks it
	}
	touched[p] = true
	if mask&syscall.IN_ISDIR == 0 {
		return
	}
	switch {
	case mask&syscall.IN_MOVED_FROM != 0:
		w.bad = true
	case mask&(syscall.IN_CREATE|syscall.IN_MOVED_TO) != 0:
		if name == ".git" {
			return // a nested repository: the caller scans fully
		}
		// Files may have been made in it before the watch: report all.
		err := w.addTree(p, func(q string) { touched[q] = true })
		if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOENT) {
			w.bad = true
		}
	}
}

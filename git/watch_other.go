//go:build !linux

package git

import "errors"

// watcher is not available on this system: muster scans worktrees fully.
type watcher struct {
	bad    bool
	events int64
}

// errNoWatcher: this system has no file watcher; worktrees are scanned fully.
var errNoWatcher = errors.New("no file watcher on this system")

func newWatcher(root string) (*watcher, error) { return nil, errNoWatcher }

func (w *watcher) close() {}

func (w *watcher) drain(touched map[string]bool) bool { return false }

//go:build !linux

package git

// watcher is not available on this system: muster scans worktrees fully.
type watcher struct {
	bad    bool
	events int64
}

func newWatcher(root string) (*watcher, error) { return nil, errNoWatcher }

func (w *watcher) close() {}

func (w *watcher) drain(touched map[string]bool) bool { return false }

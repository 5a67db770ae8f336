package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
)

// Close gives the run's clones back to the pool, where the next run of
// the repository reuses them, and removes the least recently used free
// clones beyond the pool's bound. The run branch and run directory stay.
func (w *Workspace) Close(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var watchers []*watcher
	for _, s := range w.slots {
		s.mu.Lock()
		watchers = append(watchers, s.wt)
		s.wt = nil
		s.cl.release()
		s.cl = nil
		s.mu.Unlock()
	}
	closeWatchers(watchers)
	w.slots, w.byDir = map[string]*slot{}, map[string]*slot{}
	if w.batch != nil {
		w.batch.Close()
	}
	_, err := w.pool.evict(w.pool.max)
	return err
}

// closeWatchers closes the clones' watchers at once: closing an inotify
// descriptor waits for the kernel to free its marks (about 16 ms here),
// and sixteen clones closed one after another held the end of a run for
// a quarter of a second. Closed together, the waits overlap.
func closeWatchers(ws []*watcher) {
	var wg sync.WaitGroup
	for _, wt := range ws {
		if wt != nil {
			wg.Go(wt.close)
		}
	}
	wg.Wait()
}

// PruneStale removes what older versions of muster left in the
// repository: linked worktrees under .git/muster/wt of every run for
// which live returns false, and git's records of them. It also removes a
// lock a dead process left on a run branch. Clones now live in muster's
// cache, outside the repository; run branches and run directories stay.
func PruneStale(ctx context.Context, repo string, live func(runID string) bool) error {
	top, common, err := Root(ctx, repo)
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(filepath.Join(common, "muster", "wt"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		if e.IsDir() && !live(e.Name()) {
			errs = append(errs, removeLegacyPool(ctx, top, common, e.Name()), removeRefLock(common, e.Name()))
		}
	}
	if left, _ := os.ReadDir(filepath.Join(common, "muster", "wt")); len(left) == 0 {
		_ = os.Remove(filepath.Join(common, "muster", "wt"))
	}
	if _, err := run(ctx, cmd{dir: top, args: []string{"worktree", "prune"}}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeLegacyPool removes every linked worktree under a run's old pool
// directory, .git/muster/wt/<run-id>.
func removeLegacyPool(ctx context.Context, top, common, runID string) error {
	pool := filepath.Join(common, "muster", "wt", runID)
	ents, err := os.ReadDir(pool)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var errs []error
	for _, e := range ents {
		d := filepath.Join(pool, e.Name())
		if _, err := runOnce(ctx, cmd{dir: top, args: []string{"worktree", "remove", "--force", "--force", d}}); err != nil {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := os.RemoveAll(pool); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeRefLock removes a lock left on a run branch by a dead process.
func removeRefLock(common, runID string) error {
	err := os.Remove(filepath.Join(common, "refs", "heads", "muster", runID+".lock"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

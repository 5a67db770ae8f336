package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
)

// Close removes the run's worktrees and their administrative files. The
// run branch and run directory stay.
func (w *Workspace) Close(ctx context.Context) error {
	w.createMu.Lock()
	defer w.createMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.slots {
		s.mu.Lock()
		s.wt.close()
		s.wt = nil
		s.mu.Unlock()
	}
	err := removePool(ctx, w.top, w.common, w.run)
	w.slots, w.byDir = map[string]*slot{}, map[string]*slot{}
	return err
}

// removePool removes every worktree under a run's pool directory.
func removePool(ctx context.Context, top, common, runID string) error {
	pool := poolDir(common, runID)
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
	if _, err := run(ctx, cmd{dir: top, args: []string{"worktree", "prune"}}); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// PruneStale removes the worktrees of every run for which live returns
// false (a run no process is working on) and a lock a dead process left
// on its branch, then prunes git's records of worktrees whose
// directories are gone. Run branches and run directories stay.
func PruneStale(ctx context.Context, repo string, live func(runID string) bool) error {
	top, common, err := Root(ctx, repo)
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(filepath.Join(common, "muster", "wt"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var errs []error
	for _, e := range ents {
		if e.IsDir() && !live(e.Name()) {
			errs = append(errs, removePool(ctx, top, common, e.Name()), removeRefLock(common, e.Name()))
		}
	}
	if _, err := run(ctx, cmd{dir: top, args: []string{"worktree", "prune"}}); err != nil {
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

package git

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Muster's own calls on a clone's worktree read files an agent wrote, so
// they take no setting from the user's config that makes git trust what
// the agent controls:
//
//   - core.trustctime and core.checkstat: with either relaxed, git takes
//     a file of the same size whose modification time the agent set back
//     for unchanged (a change time, which no process sets, is then not
//     compared), so a full scan stages nothing and a full reset restores
//     nothing;
//   - core.ignorecase, on clones whose file system tells case apart: git
//     then takes "makefile" beside a tracked "Makefile" for the tracked
//     file, so no change names it and clean leaves it.
//
// What they change is only how git finds changed files, never what a
// file's content or mode means, so a change is still the same as in the
// user's repository.

// caseFolds caches, by directory, whether its file system folds case.
var caseFolds sync.Map

// foldsCase reports whether the file system of dir finds a file under
// another case of its name (false when it cannot tell: git then tells
// "makefile" from "Makefile", which can hide nothing).
func foldsCase(dir string) bool {
	if v, ok := caseFolds.Load(dir); ok {
		return v.(bool)
	}
	folds := false
	if f, err := os.CreateTemp(dir, "muster-case-probe-"); err == nil {
		name := f.Name()
		f.Close()
		a, errA := os.Lstat(name)
		b, errB := os.Lstat(filepath.Join(dir, strings.ToUpper(filepath.Base(name))))
		folds = errA == nil && errB == nil && os.SameFile(a, b)
		os.Remove(name)
	}
	caseFolds.Store(dir, folds)
	return folds
}

// strictStat returns the -c pairs of muster's calls on the worktrees of
// clones kept in dir (the pool's directory), after the carried ones.
func strictStat(dir string) []string {
	a := []string{"-c", "core.trustctime=true", "-c", "core.checkstat=default"}
	if !foldsCase(dir) {
		a = append(a, "-c", "core.ignorecase=false")
	}
	return a
}

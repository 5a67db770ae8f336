package git

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/muster-run/muster"
)

var commitPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`) })

// raceRefPrefix is where a run keeps its race candidates' commits:
// refs/muster/<run>/race/<task>/<attempt>, until muster clean.
func raceRefPrefix(runID string) string { return "refs/muster/" + runID + "/race/" }

// RaceRef is the ref that keeps a race candidate's commit.
func RaceRef(runID string, task muster.TaskID, attempt int) string {
	return raceRefPrefix(runID) + RefComponent(string(task), false) + "/" + strconv.Itoa(attempt)
}

// RefComponent is a task ID as one component of a ref: the ID itself,
// or, for one git cannot take there (".." anywhere, a ".lock" suffix, and
// where the component ends the ref, a trailing "."; plans take them all),
// the ID with '-' for '.' and a hash of it, so that it stays one of its
// own and a rerun finds it again.
func RefComponent(id string, last bool) string {
	if !strings.Contains(id, "..") && !strings.HasSuffix(id, ".lock") && (!last || !strings.HasSuffix(id, ".")) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return strings.ReplaceAll(id, ".", "-") + "-" + hex.EncodeToString(sum[:4])
}

// KeepRace points refs/muster/<run>/race/<task>/<attempt> at a race
// candidate's commit (in the user's object store, where muster writes
// its objects), so that the losers outlive the run until muster clean,
// and never touch the run branch (muster.RaceKeeper).
func (w *Workspace) KeepRace(ctx context.Context, task muster.TaskID, attempt int, commit string) error {
	if !commitPattern().MatchString(commit) {
		return fmt.Errorf("keep race candidate: bad commit %q", commit)
	}
	ref := RaceRef(w.run, task, attempt)
	if _, err := run(ctx, cmd{dir: w.top, args: []string{"update-ref", ref, commit}}); err != nil {
		return fmt.Errorf("keep race candidate %s: %w", ref, err)
	}
	return nil
}

// DropRaceRefs deletes every run's race refs in the repository
// (refs/muster/*/race/...); it returns how many it deleted.
func DropRaceRefs(ctx context.Context, repo string) (int, error) {
	out, err := run(ctx, cmd{dir: repo, args: []string{"for-each-ref", "--format=%(refname)", "refs/muster/"}})
	if err != nil {
		return 0, fmt.Errorf("list race refs: %w", err)
	}
	n := 0
	for _, ref := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(ref, "/")
		if len(parts) < 6 || parts[3] != "race" {
			continue
		}
		if _, err := run(ctx, cmd{dir: repo, args: []string{"update-ref", "-d", ref}}); err != nil {
			return n, fmt.Errorf("delete %s: %w", ref, err)
		}
		n++
	}
	return n, nil
}

// RaceDiff is a race candidate's change: the diff from its base to its
// commit, both in the user's object store (no external diff, no
// textconv: the user's config runs nothing here).
func (w *Workspace) RaceDiff(ctx context.Context, base, commit string) (string, error) {
	if !commitPattern().MatchString(base) || !commitPattern().MatchString(commit) {
		return "", fmt.Errorf("race diff: bad commits %q %q", base, commit)
	}
	out, err := run(ctx, cmd{dir: w.top, args: []string{"diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", base, commit, "--"}})
	if err != nil {
		return "", fmt.Errorf("race diff: %w", err)
	}
	return string(out), nil
}

// ExportTree writes the tree of commit into dest, a fresh directory of
// muster's that must not exist yet: a race's judge works there (the
// repository at the candidates' base), never in a candidate's clone.
func (w *Workspace) ExportTree(ctx context.Context, commit, dest string) error {
	if !commitPattern().MatchString(commit) {
		return fmt.Errorf("export tree: bad commit %q", commit)
	}
	if err := os.Mkdir(dest, 0o755); err != nil {
		return fmt.Errorf("export tree: %w", err)
	}
	tmp, err := os.MkdirTemp(w.integDir, "export-")
	if err != nil {
		return fmt.Errorf("export tree: %w", err)
	}
	defer os.RemoveAll(tmp)
	idx := "GIT_INDEX_FILE=" + filepath.Join(tmp, "index")
	rt := w.ig("read-tree", commit+"^{tree}")
	rt.env = append(rt.env, idx)
	if _, err := run(ctx, rt); err != nil {
		return fmt.Errorf("export tree: %w", err)
	}
	co := w.ig("checkout-index", "--all", "--force")
	co.env = append(co.env, idx, "GIT_WORK_TREE="+dest)
	co.dir = dest
	if _, err := run(ctx, co); err != nil {
		return fmt.Errorf("export tree: %w", err)
	}
	return nil
}

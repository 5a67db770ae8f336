package git

import (
	"context"
	"fmt"
)

// DropRunBranch deletes the run branch muster/<runID> if it still points
// at commit: the branch of a session that made no commit of its own (a
// plan session, which only reads a clone). A branch that moved is left
// alone, and so is one that is already gone.
func DropRunBranch(ctx context.Context, repo, runID, commit string) error {
	if !runIDPattern().MatchString(runID) || commit == "" {
		return fmt.Errorf("drop run branch: bad run id %q or commit %q", runID, commit)
	}
	ref := "refs/heads/muster/" + runID
	if at, _ := revParse(ctx, repo, ref); at != commit {
		return nil
	}
	_, err := run(ctx, cmd{dir: repo, args: []string{"update-ref", "-d", ref, commit}})
	return err
}

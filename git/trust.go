package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	muster "github.com/muster-run/muster"
)

// ErrBranchMoved is matched (errors.Is) by a *BranchMovedError: the run
// branch is not where muster last left it.
var ErrBranchMoved = muster.ErrBranchMoved

// BranchMovedError says that the run branch is no longer at the commit
// muster last moved it to (or created it at): someone else moved,
// rewrote or deleted it. muster never builds on such a branch; the run
// stops (an environment error) until a person has looked.
type BranchMovedError struct {
	Branch string // muster/<run-id>
	// Want is the tip muster last left (the journal's record).
	Want string
	// Got is where the branch is now; empty when it is gone.
	Got string
	// Symref names the ref the branch now points to, when it was made a
	// symbolic ref.
	Symref string
}

// Error names the branch, the last known tip and what the branch is now,
// and says how to go on.
func (e *BranchMovedError) Error() string {
	now := "it is now at " + e.Got
	switch {
	case e.Symref != "":
		now = "it is now a symbolic ref to " + e.Symref
	case e.Got == "":
		now = "it was deleted"
	}
	return fmt.Sprintf("run branch %s was moved outside muster: muster last left it at %s, %s; "+
		"muster builds only on commits it made, so the run stops here. Look at what moved it; "+
		"to go on from muster's last tip: git update-ref refs/heads/%s %s, then muster resume",
		e.Branch, e.Want, now, e.Branch, e.Want)
}

// Is makes errors.Is(err, ErrBranchMoved) hold.
func (e *BranchMovedError) Is(target error) bool { return target == ErrBranchMoved }

// refValue reads the run branch as it is now: its commit ("" when it is
// gone) and, when it is a symbolic ref, what it points to. The loose ref
// file is read directly when it holds a plain object id (the common
// case, with no git process); anything else asks git.
func (w *Workspace) refValue(ctx context.Context) (id, symref string, err error) {
	if b, err := os.ReadFile(filepath.Join(w.common, filepath.FromSlash(w.ref))); err == nil {
		if s := strings.TrimSuffix(string(b), "\n"); isObjectID(s) {
			return s, "", nil
		}
	}
	out, err := run(ctx, cmd{dir: w.top, readOnly: true, args: []string{"for-each-ref",
		"--format=%(refname)%00%(objectname)%00%(symref)", w.ref}})
	if err != nil {
		return "", "", fmt.Errorf("read run branch %s: %w", w.branch, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Split(l, "\x00")
		if len(f) == 3 && f[0] == w.ref {
			return f[1], f[2], nil
		}
	}
	return "", "", nil
}

// isObjectID reports whether s is a full SHA-1 or SHA-256 hex id.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// checkTip fails with a *BranchMovedError unless the run branch is at
// want, a plain ref. The caller holds integrateMu.
func (w *Workspace) checkTip(ctx context.Context, want string) error {
	id, symref, err := w.refValue(ctx)
	if err != nil {
		return err
	}
	if id == want && symref == "" {
		return nil
	}
	return &BranchMovedError{Branch: w.branch, Want: want, Got: id, Symref: symref}
}

// Commit is one commit on the run branch, with the task its Muster-Task
// trailer names (empty: none). A trailer is a claim, not a proof: only
// the journal says which commits muster made.
type Commit struct {
	ID      string
	Task    string
	Parents []string
	Subject string
}

// Commits returns every commit reachable from the run branch and not
// from the base (side parents of merges included), newest first. A
// branch that is gone has none.
func (w *Workspace) Commits(ctx context.Context) ([]Commit, error) {
	id, _, err := w.refValue(ctx)
	if err != nil || id == "" {
		return nil, err
	}
	out, err := run(ctx, cmd{dir: w.top, readOnly: true, args: []string{"log", "--no-show-signature",
		"--format=%H%x00%P%x00%(trailers:key=" + TrailerTask + ",valueonly,separator=%x01)%x00%s%x00", id, "^" + w.base, "--"}})
	if err != nil {
		return nil, fmt.Errorf("list the run branch's commits: %w", err)
	}
	var res []Commit
	f := strings.Split(string(out), "\x00")
	for i := 0; i+3 < len(f); i += 4 {
		c := Commit{ID: strings.TrimSpace(f[i]), Parents: strings.Fields(f[i+1]),
			Task: strings.TrimSpace(strings.Split(f[i+2], "\x01")[0]), Subject: f[i+3]}
		if c.ID != "" {
			res = append(res, c)
		}
	}
	return res, nil
}

// ReadBranch reads a run's branch without opening the run (verify): its
// tip ("" when it is gone) and its commits since base, as Commits lists
// them. Nothing is created or changed.
func ReadBranch(ctx context.Context, repo, runID, base string) (tip string, commits []Commit, err error) {
	if !runIDPattern().MatchString(runID) || strings.Contains(runID, "..") {
		return "", nil, fmt.Errorf("run id %q is not a run id", runID)
	}
	top, common, err := Root(ctx, repo)
	if err != nil {
		return "", nil, err
	}
	w := &Workspace{top: top, common: common, run: runID, branch: "muster/" + runID, ref: "refs/heads/muster/" + runID, base: base}
	tip, _, err = w.refValue(ctx)
	if err != nil || tip == "" {
		return "", nil, err
	}
	commits, err = w.Commits(ctx)
	return tip, commits, err
}

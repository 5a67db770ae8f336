package git

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	muster "github.com/muster-run/muster"
)

// ErrNoChange is returned by Commit when the worktree holds no change.
var ErrNoChange = errors.New("no change to commit")

// Trailer keys of task commits.
const (
	TrailerRun      = "Muster-Run"
	TrailerTask     = "Muster-Task"
	TrailerExecutor = "Muster-Executor"
	TrailerFollowup = "Muster-Followup"
)

// Message returns a task commit's message: "<task>: <title>", a blank
// line and the trailers. The title is made one line.
func Message(info muster.CommitInfo) string {
	title := oneLine(info.Title)
	subject := string(info.Task)
	if title != "" {
		subject += ": " + title
	}
	msg := fmt.Sprintf("%s\n\n%s: %s\n%s: %s\n%s: %s\n", subject,
		TrailerRun, oneLine(info.Run), TrailerTask, oneLine(string(info.Task)), TrailerExecutor, oneLine(info.Executor))
	if info.Followup > 0 {
		msg += fmt.Sprintf("%s: %d\n", TrailerFollowup, info.Followup)
	}
	return msg
}

// oneLine turns control characters (newlines included) into spaces.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// Commit records the change in dir against base as one commit whose
// only parent is base, authored by the git config identity (or "muster
// <muster@localhost>"). It commits the change the last Change call
// computed, the one Violations, gates and reviewers saw, so that a file
// written afterwards (by a gate, say) cannot slip in unchecked; without
// a Change since Prepare or Revert it computes the change now. No branch
// moves and the worktree's own index and HEAD are not used. An empty
// change returns ErrNoChange.
func (w *Workspace) Commit(ctx context.Context, dir, base string, info muster.CommitInfo) (string, error) {
	s, err := w.lookup(ctx, dir)
	if err != nil {
		return "", err
	}
	defer s.mu.Unlock()
	snap, err := w.snapshotFor(ctx, s, base)
	if err != nil {
		return "", err
	}
	if snap.change.Empty() {
		return "", ErrNoChange
	}
	msg := Message(info)
	now := time.Now()
	env := append([]string{"GIT_AUTHOR_DATE=" + strconv.FormatInt(now.Unix(), 10) + " " + now.Format("-0700")}, w.ident...)
	c, err := w.commitTree(ctx, snap.tree, base, msg, env)
	if err == nil {
		w.integrateMu.Lock()
		w.meta[c] = commitMeta{msg, env}
		w.integrateMu.Unlock()
	}
	return c, err
}

// commitTree makes a commit of tree with one parent, without signing it
// (a run is unattended).
func (w *Workspace) commitTree(ctx context.Context, tree, parent, msg string, env []string) (string, error) {
	// Written here when it is the plain kind (object.go); else by git.
	if id, err := w.writeCommitObject(tree, parent, msg, env); err != nil || id != "" {
		return id, err
	}
	c := w.ig("commit-tree", "--no-gpg-sign", "-p", parent, "-F", "-", tree)
	c.env, c.stdin = append(c.env, env...), []byte(msg)
	id, err := line(ctx, c)
	if err != nil {
		return "", fmt.Errorf("commit-tree: %w", err)
	}
	return id, nil
}

// mergeTreeArgs returns the argv of the three-way merge of commit onto tip
// with base as merge base.
func mergeTreeArgs(explicitBase bool, base, tip, commit string) []string {
	a := []string{"merge-tree", "--write-tree", "-z", "--name-only", "--no-messages"}
	if explicitBase {
		a = append(a, "--merge-base="+base)
	}
	return append(a, tip, commit)
}

// Integrate puts a task commit made on base onto the run branch. When the
// tip is still base the branch fast-forwards to commit; otherwise the
// three-way merge of base, tip and commit (git merge-tree) becomes one
// new commit on the tip with commit's message and author. On conflict
// the paths in conflict are returned and the branch is not moved. Every
// move is an update-ref with the expected old value, so the branch never
// holds a half-made state; calls are serialised.
func (w *Workspace) Integrate(ctx context.Context, commit, base string) (tip string, conflicts []string, err error) {
	w.integrateMu.Lock()
	defer w.integrateMu.Unlock()
	return w.integrate(ctx, commit, base)
}

func (w *Workspace) integrate(ctx context.Context, commit, base string) (tip string, conflicts []string, err error) {
	old, err := w.readTip(ctx)
	if err != nil {
		return "", nil, err
	}
	merged, conflicts, err := w.merge(ctx, old, commit, base)
	if err != nil || len(conflicts) > 0 {
		if len(conflicts) > 0 {
			merged = old
		}
		return merged, conflicts, err
	}
	if err := w.advance(ctx, merged, old); err != nil {
		return "", nil, err
	}
	delete(w.meta, commit)
	return merged, nil, nil
}

// Merge computes the commit Integrate would put on the run branch, without
// moving the branch: commit itself when the tip is still base, else one
// new commit on the tip holding the three-way merge, with commit's message
// and author. On conflict it returns the paths in conflict.
func (w *Workspace) Merge(ctx context.Context, commit, base string) (merged string, conflicts []string, err error) {
	w.integrateMu.Lock()
	defer w.integrateMu.Unlock()
	old, err := w.readTip(ctx)
	if err != nil {
		return "", nil, err
	}
	return w.merge(ctx, old, commit, base)
}

// MergeOnto is Merge onto onto, a commit above the tip that an earlier
// MergeOnto returned (or the tip itself): the next link of an
// integration batch's chain. Advance then moves the branch over the
// whole chain to its top at once.
func (w *Workspace) MergeOnto(ctx context.Context, onto, commit, base string) (merged string, conflicts []string, err error) {
	w.integrateMu.Lock()
	defer w.integrateMu.Unlock()
	old, err := w.readTip(ctx)
	if err != nil {
		return "", nil, err
	}
	if _, ok := w.chained[onto]; onto != old && !ok {
		return "", nil, fmt.Errorf("merge %s onto %s: not the tip (%s) nor a commit of the batch muster built on it", commit, onto, old)
	}
	merged, conflicts, err = w.merge(ctx, onto, commit, base)
	if err == nil && merged != "" && merged != onto {
		w.chained[merged] = onto
	}
	return merged, conflicts, err
}

// Advance moves the run branch to merged when it is still at expectedTip
// (update-ref with the expected old value); otherwise nothing moves.
// expectedTip must be the tip muster last left: a branch found anywhere
// else is a *BranchMovedError.
func (w *Workspace) Advance(ctx context.Context, merged, expectedTip string) error {
	w.integrateMu.Lock()
	defer w.integrateMu.Unlock()
	return w.advance(ctx, merged, expectedTip)
}

// advance is the compare-and-swap of the run branch from old, the tip
// muster last left, to merged (in process when it can: moveRef). When
// the move fails the branch is read again: at merged, the move was
// muster's own and took effect; at old, the failure was git's (returned
// as is); anywhere else, someone moved the branch (*BranchMovedError),
// and nothing is built on it.
func (w *Workspace) advance(ctx context.Context, merged, old string) error {
	if old != w.tip {
		return fmt.Errorf("advance the run branch to %s: expected tip %s is not the tip muster last left, %s", merged, old, w.tip)
	}
	// update-ref checks the old value of what the ref resolves to: a
	// symbolic ref an agent made would pass when its target is at old.
	if err := w.checkTip(ctx, old); err != nil {
		return err
	}
	moved, err := w.moveRef(old, merged)
	if !moved {
		_, err = run(ctx, cmd{dir: w.top, args: []string{"update-ref", "--no-deref", "-m", refMoveMsg, w.ref, merged, old}})
	}
	if err != nil {
		id, symref, rerr := w.refValue(ctx)
		switch {
		case rerr != nil:
			return fmt.Errorf("advance the run branch to %s: %w", merged, err)
		case id == merged && symref == "":
			// muster's own move went through.
		case id == old && symref == "":
			return fmt.Errorf("advance the run branch to %s: %w", merged, err)
		default:
			return &BranchMovedError{Branch: w.branch, Want: old, Got: id, Symref: symref}
		}
	}
	w.setTip(merged)
	w.keepChainedOn(merged)
	return nil
}

// keepChainedOn keeps of the commits MergeOnto made those built on tip,
// the new tip (the next batch's chain, merged while the batch that just
// landed was gated), and forgets the rest: commits of a batch that did
// not land are never built on again.
func (w *Workspace) keepChainedOn(tip string) {
	on := func(c string) bool {
		for range len(w.chained) + 1 {
			p, ok := w.chained[c]
			if !ok {
				return false
			}
			if p == tip {
				return true
			}
			c = p
		}
		return false
	}
	for c := range w.chained {
		if !on(c) {
			delete(w.chained, c)
		}
	}
}

// merge returns commit when old is base, else the merge of commit (made
// on base) onto old as one new commit whose parent is old.
func (w *Workspace) merge(ctx context.Context, old, commit, base string) (merged string, conflicts []string, err error) {
	if old == base {
		return commit, nil, nil
	}
	if !w.mergeBase && !w.onBranch[base] {
		// Without --merge-base git computes the merge base of tip and
		// commit, which is base exactly when base is an ancestor of tip
		// (commit's only parent is base).
		ok, err := isAncestor(ctx, w.top, base, old)
		if err != nil {
			return "", nil, err
		}
		if !ok {
			return "", nil, fmt.Errorf("integrate %s: base %s is not on the run branch", commit, base)
		}
	}
	// The trivial kind of merge without a process (treemerge.go).
	tree := w.treeMerge(ctx, base, old, commit)
	if tree == "" {
		if tree, conflicts, err = w.mergeTree(ctx, old, commit, base); tree == "" {
			return "", conflicts, err
		}
	}
	m, ok := w.meta[commit] // made here: message, author and date known
	if !ok {
		if m, err = w.readMeta(ctx, commit); err != nil {
			return "", nil, err
		}
	}
	c, err := w.commitTree(ctx, tree, old, m.msg, m.env)
	return c, nil, err
}

// mergeTree runs `git merge-tree` for the merge of commit (made on base)
// onto old: the merged tree, or the paths in conflict.
func (w *Workspace) mergeTree(ctx context.Context, old, commit, base string) (tree string, conflicts []string, err error) {
	out, err := run(ctx, w.ig(mergeTreeArgs(w.mergeBase, base, old, commit)...))
	f := splitZ(out)
	if err != nil {
		if exitCode(err) == 1 && len(f) > 0 {
			seen := map[string]bool{}
			for _, p := range f[1:] {
				if p != "" && !seen[p] {
					seen[p] = true
					conflicts = append(conflicts, p)
				}
			}
			return "", conflicts, nil
		}
		return "", nil, fmt.Errorf("integrate %s: merge: %w", commit, err)
	}
	if len(f) == 0 {
		return "", nil, fmt.Errorf("integrate %s: merge-tree printed no tree", commit)
	}
	return f[0], nil, nil
}

// commitMeta is a task commit's message and the environment that keeps
// its author (name, email and date), with muster's committer.
type commitMeta struct {
	msg string
	env []string
}

// readMeta reads a commit's commitMeta.
func (w *Workspace) readMeta(ctx context.Context, commit string) (commitMeta, error) {
	c := w.ig("log", "-1", "--no-show-signature", "--no-mailmap", "--format=%an%x00%ae%x00%ad%x00%B", "--date=raw", commit)
	c.readOnly = true
	out, err := run(ctx, c)
	if err != nil {
		return commitMeta{}, fmt.Errorf("read commit %s: %w", commit, err)
	}
	p := strings.SplitN(string(out), "\x00", 4)
	if len(p) != 4 {
		return commitMeta{}, fmt.Errorf("read commit %s: unexpected output", commit)
	}
	env := []string{"GIT_AUTHOR_NAME=" + p[0], "GIT_AUTHOR_EMAIL=" + p[1], "GIT_AUTHOR_DATE=" + p[2]}
	env = append(env, w.ident[2:]...) // committer
	return commitMeta{strings.TrimRight(p[3], "\n") + "\n", env}, nil
}

// TaskCommits returns the commits on the run branch since the base, by
// their Muster-Task trailer (the newest when a task has several). Resume
// uses it to find tasks whose commit landed before a crash.
func (w *Workspace) TaskCommits(ctx context.Context) (map[muster.TaskID]string, error) {
	tip, err := revParse(ctx, w.top, w.ref)
	if err != nil {
		return nil, fmt.Errorf("list task commits: run branch %s: %w", w.branch, err)
	}
	c := w.ig("log", "--first-parent", "--no-show-signature", "--no-mailmap",
		"--format=%H%x00%(trailers:key="+TrailerTask+",valueonly,separator=%x01)%x00", w.base+".."+tip)
	c.readOnly = true
	out, err := run(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("list task commits: %w", err)
	}
	res := map[muster.TaskID]string{}
	f := strings.Split(string(out), "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		id := strings.TrimSpace(f[i])
		task := strings.TrimSpace(strings.Split(f[i+1], "\x01")[0])
		if id == "" || task == "" {
			continue
		}
		if _, ok := res[muster.TaskID(task)]; !ok { // log lists newest first
			res[muster.TaskID(task)] = id
		}
	}
	return res, nil
}

package pr

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/cli/runner"
	"github.com/muster-run/muster/internal/owns"
	"github.com/muster-run/muster/internal/textsafe"
)

// FollowOptions are muster pr --follow's own flags.
type FollowOptions struct {
	Once      bool
	Interval  time.Duration
	MaxRounds int
	BudgetUSD float64
	// From lists logins whose comments count besides the repository's
	// owners, members and collaborators.
	From []string
}

// trusted are the author associations whose feedback muster acts on:
// anyone can comment on a public repository.
var trusted = []string{"OWNER", "MEMBER", "COLLABORATOR"}

// item is one piece of feedback: a failed check or a review comment.
type item struct {
	key  string // stable: "check:NAME@SHA", "comment:ID", "review:ID"
	path string // the file it names ("" for a check or a review)
	text string // for the task's prompt (untrusted, bounded)
	// files are the file names in a check's output.
	files []string
}

// follow runs --follow: one pass with --once, else passes every
// interval until the pull requests are green with no change requested,
// the rounds are used, or the budget is.
func (p *publisher) follow(ctx context.Context, io *cmdutil.IOStreams, fo *FollowOptions, res *published) error {
	for round := 1; ; round++ {
		acted, err := p.followPass(ctx, io, fo, res)
		if err != nil || fo.Once {
			return err
		}
		if !acted && p.settled {
			fmt.Fprintln(io.ErrOut, "pull request: checks green and no change requested: done")
			return nil
		}
		if round >= fo.MaxRounds {
			fmt.Fprintf(io.ErrOut, "pull request: %d follow-up rounds done (--max-rounds): stopping\n", fo.MaxRounds)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(fo.Interval):
		}
		if res, err = p.publish(ctx); err != nil {
			return err
		}
	}
}

// followPass reads each pull request's feedback, gives the new items to
// the tasks that own their files, resumes the run with them, and
// publishes the result. It reports whether it acted.
func (p *publisher) followPass(ctx context.Context, io *cmdutil.IOStreams, fo *FollowOptions, res *published) (bool, error) {
	taken, err := p.takenKeys()
	if err != nil {
		return false, cmdutil.Env("read %s: %w", p.log.path, err)
	}
	st, err := p.state()
	if err != nil {
		return false, err
	}
	byTask := map[muster.TaskID][]item{}
	p.settled = true
	for _, pl := range res.Pulls {
		if pl.Action == opMerged {
			continue
		}
		fb, err := p.forge.Feedback(ctx, pl.Number, pl.Commit)
		if err != nil {
			return false, cmdutil.Env("%w", err)
		}
		if fb.Pending {
			p.settled = false
		}
		for _, it := range p.items(fb, pl.Commit, fo) {
			p.settled = false
			if taken[it.key] {
				continue
			}
			id := owner(st, it, muster.TaskID(pl.Task))
			byTask[id] = append(byTask[id], it)
		}
	}
	if len(byTask) == 0 {
		fmt.Fprintln(io.ErrOut, "pull request: no new feedback from checks or reviewers")
		return false, nil
	}
	reopen := p.reopen(st, byTask)
	for _, r := range reopen {
		for _, it := range byTask[r.Task] {
			if err := p.log.add(record{Op: opTaken, Task: string(r.Task), Number: r.Followup, Key: it.key}); err != nil {
				return false, cmdutil.Env("%w", err)
			}
		}
	}
	if err := p.resume(ctx, io, fo, reopen); err != nil {
		return true, err
	}
	return true, p.afterPass(ctx, res, reopen)
}

// items are the feedback muster acts on: failed checks at the pull
// request's head, and comments and change requests by trusted authors
// (or --from). Others are left alone: their text never reaches an agent.
func (p *publisher) items(fb *muster.Feedback, sha string, fo *FollowOptions) []item {
	var out []item
	for _, c := range fb.Checks {
		out = append(out, item{key: "check:" + c.Name + "@" + sha, files: fileNames(c.Summary),
			text: fmt.Sprintf("The check %q failed on your change:\n%s", textsafe.OneLine(c.Name), textsafe.ClipBytes(c.Summary, 4000))})
	}
	for _, c := range fb.Comments {
		if !slices.Contains(trusted, strings.ToUpper(c.Association)) && !fromListed(fo.From, c.Author) {
			continue
		}
		it := item{key: fmt.Sprintf("comment:%d", c.ID), path: c.Path}
		if c.Path == "" {
			it.key = fmt.Sprintf("review:%d", c.ID)
			it.text = fmt.Sprintf("A reviewer (%s) requested changes:\n%s", textsafe.OneLine(c.Author), textsafe.ClipBytes(c.Body, 4000))
		} else {
			it.text = fmt.Sprintf("A reviewer (%s) commented on %s line %d:\n%s", textsafe.OneLine(c.Author), c.Path, c.Line, textsafe.ClipBytes(c.Body, 4000))
		}
		out = append(out, it)
	}
	return out
}

// filePattern finds what looks like a repository path in a check's
// output ("pkg/x.go:12", "src/a.test.js").
var filePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*\.[A-Za-z0-9]+`) })

func fileNames(s string) []string {
	return filePattern().FindAllString(s, 50)
}

// owner is the task whose Owns covers the item's file (the comment's
// path; else the first file a check names that a task owns); else the
// pull request's own task (a stack's), else the run's last task.
func owner(st *engine.State, it item, pull muster.TaskID) muster.TaskID {
	paths := it.files
	if it.path != "" {
		paths = []string{it.path}
	}
	for _, path := range paths {
		for _, id := range st.Order {
			if t := st.Tasks[id]; len(t.Task.Owns) > 0 && owns.Match(t.Task.Owns, path) {
				return id
			}
		}
	}
	if pull != "" {
		return pull
	}
	var last muster.TaskID
	var lastEnd time.Time
	for _, id := range st.Order {
		if t := st.Tasks[id]; t.State == muster.StateSucceeded && t.Commit != "" && !t.Ended.Before(lastEnd) {
			last, lastEnd = id, t.Ended
		}
	}
	return last
}

// reopen makes one TaskReopened per task, numbered after the task's
// earlier follow-ups, in plan order.
func (p *publisher) reopen(st *engine.State, byTask map[muster.TaskID][]item) []muster.Event {
	var out []muster.Event
	for _, id := range st.Order {
		its := byTask[id]
		if len(its) == 0 {
			continue
		}
		texts := make([]string, len(its))
		for i, it := range its {
			texts[i] = it.text
		}
		out = append(out, muster.Event{Type: muster.EvTaskReopened, Task: id, Followup: st.Tasks[id].Followup + 1,
			Message: strings.Join(texts, "\n\n")})
	}
	return out
}

// resume runs the pass: a resume of the run that reopens the tasks. A
// run left unfinished by an earlier pass (killed mid-way) is finished
// first, without new feedback.
func (p *publisher) resume(ctx context.Context, io *cmdutil.IOStreams, fo *FollowOptions, reopen []muster.Event) error {
	f := &preflight.Flags{Repo: p.o.RepoDir}
	if fo.BudgetUSD > 0 {
		// --budget-usd is what the follow-ups may spend on top of what
		// the run spent: the run's new total limit.
		f.BudgetUSD = float64(p.fold.Usage.CostMicros)/1e6 + fo.BudgetUSD
	}
	s, err := runner.ResumeReopening(ctx, io, p.id, f, reopen)
	if err != nil {
		return err
	}
	if s != nil && s.State != nil && s.State.RunState != muster.RunSucceeded {
		return &muster.Error{Code: muster.CodeFailed, Message: fmt.Sprintf("the follow-up pass of run %s did not succeed: muster status %s", p.id, p.id)}
	}
	return nil
}

// afterPass publishes what the pass made and says on each pull request
// which task took which feedback, with its commit and gates.
func (p *publisher) afterPass(ctx context.Context, before *published, reopen []muster.Event) error {
	if err := p.readRun(ctx); err != nil {
		return err
	}
	after, err := p.publish(ctx)
	if err != nil {
		return err
	}
	*before = *after
	var lines []string
	for _, r := range reopen {
		t := p.fold.Tasks[r.Task]
		if t == nil {
			continue
		}
		lines = append(lines, fmt.Sprintf("- %s follow-up %d: commit `%s`, gates %s, review %s", escapeMD(string(r.Task)), r.Followup,
			textsafe.Short(t.Commit), gates(t), verdict(t)))
	}
	sort.Strings(lines)
	msg := "muster took the feedback above back to the tasks that own the files:\n\n" + strings.Join(lines, "\n") +
		"\n\nThe receipt is sealed again: `muster verify " + p.id + "`."
	for _, pl := range after.Pulls {
		if pl.Action == opMerged {
			continue
		}
		if err := p.forge.Comment(ctx, pl.Number, msg); err != nil {
			return cmdutil.Env("%w", err)
		}
	}
	return nil
}

// finishPass finishes a follow-up pass that did not end (muster was
// killed during it): its tasks were reopened and their feedback taken,
// so it goes on as any resume does, before anything new is read.
func finishPass(ctx context.Context, io *cmdutil.IOStreams, o *Options) error {
	repo, err := cmdutil.OpenRepo(ctx, o.RepoDir)
	if err != nil {
		return err
	}
	id, err := repo.ResolveRun(o.RunID)
	if err != nil || repo.IsPlanSession(id) {
		return nil // prepare says what is wrong
	}
	events, err := repo.ReadRun(id)
	if err != nil {
		return err
	}
	open := false
	for _, e := range events {
		switch {
		case e.Type == muster.EvRunResumed && e.Cause == muster.CausePR:
			open = true
		case e.Type == muster.EvRunFinished:
			open = false
		}
	}
	if !open {
		return nil
	}
	fmt.Fprintf(io.ErrOut, "run %s: an earlier follow-up pass did not end: finishing it first\n", id)
	s, err := runner.Resume(ctx, io, id, &preflight.Flags{Repo: o.RepoDir})
	if err != nil {
		return err
	}
	if s != nil && s.State != nil && s.State.RunState != muster.RunSucceeded {
		return &muster.Error{Code: muster.CodeFailed, Message: fmt.Sprintf("the unfinished follow-up pass of run %s did not succeed: muster status %s", id, id)}
	}
	return nil
}

// takenKeys are the feedback keys earlier passes took.
func (p *publisher) takenKeys() (map[string]bool, error) {
	recs, err := readPublish(p.log.path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, r := range recs {
		if r.Op == opTaken {
			out[r.Key] = true
		}
	}
	return out, nil
}

func (p *publisher) state() (*engine.State, error) {
	events, err := p.repo.ReadRun(p.id)
	if err != nil {
		return nil, err
	}
	st, err := engine.Replay(events)
	if err != nil {
		return nil, cmdutil.Env("journal of run %s does not replay: %w", p.id, err)
	}
	return st, nil
}

// fromListed tells whether author is one of the --from logins, which
// GitHub compares without case; a comment without an author (a deleted
// account) never is.
func fromListed(from []string, author string) bool {
	return author != "" && slices.ContainsFunc(from, func(l string) bool { return strings.EqualFold(l, author) })
}

// validLogin is GitHub's syntax for a login: 1 to 39 letters, digits
// and hyphens, a hyphen neither first, last nor doubled.
func validLogin(l string) bool {
	if l == "" || len(l) > 39 || l[0] == '-' || l[len(l)-1] == '-' || strings.Contains(l, "--") {
		return false
	}
	for _, r := range l {
		if r != '-' && (r < '0' || r > '9') && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

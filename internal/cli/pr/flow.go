package pr

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/forge"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/textsafe"
)

// StackPrefix starts the branches of a stack: muster-stack/<run>/<task>
// (git cannot hold both muster/<run> and muster/<run>/<task>).
const StackPrefix = "muster-stack/"

// unit is one branch to push and one pull request to open for it.
type unit struct {
	task   muster.TaskID // "" for the run's one pull request
	branch string
	commit string
	base   string
	tasks  []muster.TaskID
}

// units are the branches and pull requests of this publication: one for
// the run, or one per task commit, in the run branch's (topological)
// order, each based on the one before.
func (p *publisher) units() []unit {
	if !p.o.Stack {
		return []unit{{branch: "muster/" + p.id, commit: p.tip, base: p.base, tasks: p.fold.Order}}
	}
	var out []unit
	base := p.base
	// git.ReadBranch lists the newest first; a stack starts at the oldest.
	for i := len(p.commits) - 1; i >= 0; i-- {
		c := p.commits[i]
		if c.Task == "" {
			continue
		}
		b := StackPrefix + p.id + "/" + git.RefComponent(c.Task, true)
		out = append(out, unit{task: muster.TaskID(c.Task), branch: b, commit: c.ID, base: base, tasks: []muster.TaskID{muster.TaskID(c.Task)}})
		base = b
	}
	return out
}

func (p *publisher) publish(ctx context.Context) (*published, error) {
	us := p.units()
	if len(us) == 0 {
		return nil, &muster.Error{Code: muster.CodeFailed, Message: fmt.Sprintf("run %s has no task commit to publish", p.id)}
	}
	if err := p.check(ctx); err != nil {
		return nil, err
	}
	if err := p.push(ctx, us); err != nil {
		return nil, err
	}
	res := &published{Run: p.id, Repo: p.slug, Remote: p.o.Remote}
	stack := make([]stackEntry, len(us))
	prs := make([]*muster.PullRequest, len(us))
	for i, u := range us {
		stack[i] = stackEntry{Task: u.task}
		pr, action, err := p.pull(ctx, u, p.spec(u, stack, i))
		if err != nil {
			return res, err
		}
		prs[i] = pr
		stack[i].Number = pr.Number
		res.Pulls = append(res.Pulls, pulled{Task: string(u.task), Branch: u.branch, Commit: u.commit, Base: u.base,
			Number: pr.Number, URL: pr.URL, Action: action})
	}
	// A stack's bodies link every pull request of it: written again once
	// each has its number.
	for i, u := range us {
		if len(us) < 2 || prs[i].State == muster.PullMerged {
			continue
		}
		spec := p.spec(u, stack, i)
		if _, err := p.forge.UpdatePull(ctx, prs[i].Number, spec, false); err != nil {
			return res, cmdutil.Env("%w", err)
		}
	}
	return res, nil
}

func (p *publisher) spec(u unit, stack []stackEntry, self int) muster.PullSpec {
	in := bodyInput{Run: p.id, Fold: p.fold, Receipt: p.receipt, Tasks: u.tasks, Self: -1}
	title := "muster run " + p.id
	if p.plan != nil {
		in.Title, in.Brief = p.plan.Title, p.plan.Brief
		if p.plan.Title != "" {
			title = p.plan.Title
		}
	}
	if u.task != "" {
		in.Stack, in.Self = stack, self
		if t := p.fold.Tasks[u.task]; t != nil {
			title = string(t.ID) + ": " + t.Title
		}
	}
	head := u.branch
	if own, _, _ := strings.Cut(p.slug, "/"); own != p.owner {
		head = p.owner + ":" + u.branch
	}
	return muster.PullSpec{Title: oneLine(title, 200), Body: body(in), Head: head, Base: u.base, Draft: p.o.Draft}
}

// oneLine makes an untrusted title one line of at most n runes, with
// no escape sequence, control character or bidirectional override.
// Titles are plain text on GitHub (no Markdown), so only mentions are cut.
func oneLine(s string, n int) string {
	s = unmention(textsafe.OneLine(textsafe.Sanitize(s)))
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// push pushes every unit's commit to its branch, fast-forward only, in
// one atomic push. A remote branch at a commit the run did not make
// stops muster (exit 3) naming it.
func (p *publisher) push(ctx context.Context, us []unit) error {
	env := p.gitEnv()
	var todo []git.Push
	for _, u := range us {
		at, err := git.RemoteBranch(ctx, p.repo.Top, p.o.Remote, u.branch, env)
		if err != nil {
			return cmdutil.Env("%w", err)
		}
		if at == u.commit {
			continue
		}
		if at != "" {
			ok, err := git.Contains(ctx, p.repo.Top, u.commit, at)
			if err != nil {
				return cmdutil.Env("%w", err)
			}
			if !ok {
				return p.moved(u, at)
			}
		}
		todo = append(todo, git.Push{Commit: u.commit, Branch: u.branch})
	}
	err := git.PushBranches(ctx, p.repo.Top, p.o.Remote, todo, env)
	if errors.Is(err, git.ErrNotFastForward) {
		return cmdutil.Env("%w: someone pushed to it meanwhile; muster pushes fast-forward only: fetch and look at it, then run muster pr again", err)
	}
	if err != nil {
		return cmdutil.Env("push to %s: %w", p.o.Remote, err)
	}
	for _, t := range todo {
		if err := p.log.add(record{Op: opPushed, Remote: p.o.Remote, Branch: t.Branch, Commit: t.Commit}); err != nil {
			return cmdutil.Env("%w", err)
		}
	}
	return nil
}

func (p *publisher) moved(u unit, at string) error {
	return cmdutil.Env("the remote %s's branch %s is at %s, a commit this run did not make: someone else moved it; "+
		"muster pushes fast-forward only and will not overwrite it (delete that branch on the remote, or publish another run)",
		p.o.Remote, u.branch, textsafe.Short(at))
}

// gitEnv is what git push and ls-remote get: muster itself as the
// askpass program, with the token in the environment, for GitHub's host
// only.
func (p *publisher) gitEnv() []string {
	return []string{"GIT_ASKPASS=" + p.o.Exe, AskPassTokenEnv + "=" + p.token, AskPassHostEnv + "=" + GitHubHost(p.o.Getenv)}
}

// pull opens, updates or reopens the pull request of u, found by its
// head branch; a merged one is left alone.
// check asks GitHub for the repository before anything is pushed: a
// wrong token or repository pushed the run's branches and then failed.
func (p *publisher) check(ctx context.Context) error {
	return p.repoErr(p.forge.Check(ctx))
}

// repoErr says what to check when GitHub has no such repository.
func (p *publisher) repoErr(err error) error {
	if errors.Is(err, forge.ErrNotFound) {
		return cmdutil.Env("%w: GitHub has no repository %s that this token can see: name the right one with --github-repo OWNER/NAME "+
			"(or GITHUB_REPOSITORY), or give the token access to it", err, p.slug)
	}
	if err != nil {
		return cmdutil.Env("%w", err)
	}
	return nil
}

func (p *publisher) pull(ctx context.Context, u unit, spec muster.PullSpec) (*muster.PullRequest, string, error) {
	found, err := p.forge.FindPull(ctx, p.owner+":"+u.branch)
	if err != nil {
		return nil, "", p.repoErr(err)
	}
	rec := record{Repo: p.slug, Branch: u.branch, Commit: u.commit, Base: u.base, Task: string(u.task)}
	var pr *muster.PullRequest
	switch {
	case found == nil:
		rec.Op = opOpened
		pr, err = p.forge.CreatePull(ctx, spec)
	case found.State == muster.PullMerged:
		rec.Op, pr = opMerged, found
	case found.State == muster.PullClosed:
		rec.Op = opReopened
		pr, err = p.forge.UpdatePull(ctx, found.Number, spec, true)
	default:
		rec.Op = opUpdated
		pr, err = p.forge.UpdatePull(ctx, found.Number, spec, false)
	}
	if errors.Is(err, forge.ErrInvalid) {
		return nil, "", cmdutil.Env("%w: check that the base branch %s is on %s (--base BRANCH names another) and that %s has commits it lacks",
			err, u.base, p.slug, u.branch)
	}
	if err != nil {
		return nil, "", cmdutil.Env("%w", err)
	}
	rec.Number, rec.URL = pr.Number, pr.URL
	if err := p.log.add(rec); err != nil {
		return nil, "", cmdutil.Env("%w", err)
	}
	return pr, rec.Op, nil
}

// slugPattern takes OWNER/NAME from a remote's URL: https://HOST/O/N(.git),
// ssh://git@HOST(:PORT)/O/N(.git), git@HOST:O/N(.git).
var slugPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[a-z+]+://(?:[^@/]+@)?[^/]+/|[^@/:]+@[^:/]+:)([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$`)
})

func slugOf(url string) string {
	m := slugPattern().FindStringSubmatch(url)
	if m == nil {
		return ""
	}
	return m[1] + "/" + m[2]
}

// findToken is GITHUB_TOKEN, GH_TOKEN, or what `gh auth token` prints.
func findToken(ctx context.Context, getenv func(string) string) string {
	for _, k := range []string{"GITHUB_TOKEN", "GH_TOKEN"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
	}
	if _, err := exec.LookPath("gh"); err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "gh", "auth", "token").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

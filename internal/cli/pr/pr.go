// Package pr is the muster pr command: it pushes a run's branch (or one
// branch per task with --stack) and opens or updates its pull request on
// GitHub, recording what it did in the run's publish.jsonl.
package pr

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/forge"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/redact"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/journal"
	"github.com/muster-run/muster/planfile"
	"github.com/muster-run/muster/receipt"
	"github.com/muster-run/muster/runview"
)

// Options are muster pr's flags and what it reads from the environment.
type Options struct {
	RepoDir string
	RunID   string
	Stack   bool
	Draft   bool
	Base    string // the base branch (default: the branch the run started from)
	Remote  string // where to push (default origin)
	// GitHubRepo is OWNER/NAME where the pull request opens (default
	// GITHUB_REPOSITORY, else the remote's URL).
	GitHubRepo string
	JSON       bool
	// Follow, when set, turns the pull request's feedback into fix
	// rounds (--follow and its flags).
	Follow *FollowOptions

	// Getenv reads the environment (os.Getenv when nil); Exe is muster's
	// own executable, git's GIT_ASKPASS (os.Executable when empty).
	Getenv func(string) string
	Exe    string
	Now    func() time.Time
}

// NewCmd returns muster pr.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "pr [RUN]",
		Short: "Push a run and open (or update) its pull request on GitHub (default: the latest run)",
		Long: `Push the run branch muster/<run> to the remote (fast-forward only) and open one
pull request for it through GitHub's REST API, or update the one already open
for that branch (a closed one is reopened; a merged one is left alone). The
body holds the plan's title and brief, a table of tasks (executor, gates,
review, cost), the run's totals and its receipt with the muster verify line.

--stack opens one pull request per task instead: branch
muster-stack/<run>/<task> at that task's commit, each based on the one before.
A run with a failed or skipped task is refused (exit 1) unless --draft.

The API base is GITHUB_API_URL (default the public API); the repository
GITHUB_REPOSITORY or --github-repo (default: from the remote's URL); the token
GITHUB_TOKEN, GH_TOKEN or 'gh auth token'. The token is never on a command
line, in a URL or in a file: git gets it through GIT_ASKPASS (muster itself).
What was pushed and opened is appended to publish.jsonl in the run directory;
the journal and receipt are untouched, so muster verify still holds.
Exit 3 when the remote branch moved to a commit the run did not make, or the
API refuses.

--follow reads the pull request's failed checks and statuses, its review
comments and change requests (from the repository's owners, members and
collaborators, or --from), gives each to the task whose Owns covers the file
it names (else the last task), and resumes the run: a follow-up round of that
task on the run branch's tip, through its gates, review and the integration
queue, committed with a Muster-Followup trailer; the receipt is sealed again.
Then it pushes and says what it did on the pull request. It repeats every
--interval until checks are green and no change is requested, for at most
--max-rounds passes or --budget-usd; --once makes one pass. See docs/pr.md.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.RunID = args[0]
			}
			return Run(cmd.Context(), io, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.RepoDir, "repo", "", "repository to work in (default: current directory)")
	f.BoolVar(&o.Stack, "stack", false, "one branch and pull request per task, each based on the one before")
	f.BoolVar(&o.Draft, "draft", false, "open as a draft (also allows a run with failed or skipped tasks)")
	f.StringVar(&o.Base, "base", "", "base branch (default: the branch the run started from)")
	f.StringVar(&o.Remote, "remote", "origin", "remote to push to")
	f.StringVar(&o.GitHubRepo, "github-repo", "", "OWNER/NAME where the pull request opens (default: GITHUB_REPOSITORY, else the remote's URL)")
	f.BoolVar(&o.JSON, "json", false, "print what was pushed and opened as JSON")
	// --config is a common flag (ARCHITECTURE.md §2.1); a run's config is in its journal.
	f.String("config", "", "config file (accepted for symmetry; a run's config is in its journal)")
	fo := &FollowOptions{}
	var follow bool
	f.BoolVar(&follow, "follow", false, "turn failed checks and review comments into fix rounds of the tasks that own the files, push, and say so on the pull request")
	f.BoolVar(&fo.Once, "once", false, "with --follow: one pass, then exit (for CI)")
	f.DurationVar(&fo.Interval, "interval", time.Minute, "with --follow: how long to wait between passes")
	f.IntVar(&fo.MaxRounds, "max-rounds", 3, "with --follow: passes that act on feedback, at most")
	f.Float64Var(&fo.BudgetUSD, "budget-usd", 0, "with --follow: what the follow-ups may spend, in dollars, on top of the run's spending")
	f.StringSliceVar(&fo.From, "from", nil, "with --follow: logins whose comments count besides the repository's owners, members and collaborators")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if !follow {
			for _, n := range []string{"once", "interval", "max-rounds", "budget-usd", "from"} {
				if cmd.Flags().Changed(n) {
					return cmdutil.FlagErrorf("--%s goes with --follow", n)
				}
			}
			return nil
		}
		if fo.MaxRounds < 1 || fo.Interval < time.Second || fo.BudgetUSD < 0 {
			return cmdutil.FlagErrorf("--follow wants --max-rounds of 1 or more, an --interval of a second or more and a --budget-usd of 0 or more")
		}
		for _, l := range fo.From {
			if !validLogin(l) {
				return cmdutil.FlagErrorf("--from %q is not a GitHub login (letters, digits and single hyphens inside, at most 39): list the logins whose comments count, comma-separated", textsafe.Clip(l, 60))
			}
		}
		o.Follow = fo
		return nil
	}
	return cmd
}

// published is what one muster pr did, for people and for --json.
type published struct {
	Run    string   `json:"run"`
	Repo   string   `json:"repo"`
	Remote string   `json:"remote"`
	Pulls  []pulled `json:"pulls"`
}

type pulled struct {
	Task   string `json:"task,omitempty"`
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	Base   string `json:"base"`
	Number int    `json:"number"`
	URL    string `json:"url"`
	// Action is what muster did: opened, updated, reopened, or merged
	// (already merged: left alone).
	Action string `json:"action"`
}

// Run publishes run o.RunID (or the latest run).
func Run(ctx context.Context, io *cmdutil.IOStreams, o *Options) error {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Follow != nil {
		if err := finishPass(ctx, io, o); err != nil {
			return err
		}
	}
	p, err := prepare(ctx, o)
	if err != nil {
		return err
	}
	res, err := p.publish(ctx)
	if err == nil && o.Follow != nil {
		err = p.follow(ctx, io, o.Follow, res)
	}
	if res != nil {
		report(io, o.JSON, res)
	}
	return p.redact(err)
}

// publisher is one muster pr at work.
type publisher struct {
	o       *Options
	repo    *cmdutil.Repo
	id      string
	fold    *runview.Run
	receipt *receipt.Receipt
	plan    *muster.Plan
	tip     string
	commits []git.Commit
	base    string
	slug    string // OWNER/NAME of the pull request
	owner   string // the pushed branch's owner (a fork's, or slug's)
	token   string
	forge   muster.Forge
	log     *publishLog
	red     *redact.Redactor
	// settled: the last follow pass saw no pending check and no
	// feedback, taken or not.
	settled bool
}

func prepare(ctx context.Context, o *Options) (*publisher, error) {
	repo, err := cmdutil.OpenRepo(ctx, o.RepoDir)
	if err != nil {
		return nil, err
	}
	id, err := repo.ResolveRun(o.RunID)
	if err != nil {
		return nil, err
	}
	if repo.IsPlanSession(id) {
		return nil, cmdutil.Invalid("%s is a plan session (muster plan), not a run: it has no branch to publish", id)
	}
	if journal.Locked(repo.JournalPath(id)) {
		return nil, cmdutil.Env("run %s is being driven by a muster process: publish it once it ends", id)
	}
	p := &publisher{o: o, repo: repo, id: id, red: redact.New(),
		log: &publishLog{path: repo.RunDir(id) + "/" + PublishFile, now: o.Now}}
	if err := p.readRun(ctx); err != nil {
		return nil, err
	}
	if err := p.connect(ctx); err != nil {
		return nil, p.redact(err)
	}
	return p, nil
}

// readRun folds the journal, checks the run may be published, and reads
// its branch and receipt.
func (p *publisher) readRun(ctx context.Context) error {
	events, err := p.repo.ReadRun(p.id)
	if err != nil {
		return err
	}
	p.fold = runview.Fold(events)
	if err := p.checkOutcome(); err != nil {
		return err
	}
	r, err := receipt.Read(p.repo.RunDir(p.id))
	switch {
	case errors.Is(err, os.ErrNotExist) && !p.o.Draft:
		return &muster.Error{Code: muster.CodeFailed, Message: fmt.Sprintf(
			"run %s has not ended (no sealed receipt): muster resume %s finishes it; --draft publishes it as it is", p.id, p.id)}
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return cmdutil.Env("read the receipt of run %s: %w", p.id, err)
	}
	p.receipt = r
	if p.tip, p.commits, err = git.ReadBranch(ctx, p.repo.Top, p.id, p.fold.Base); err != nil {
		return cmdutil.Env("read the run branch: %w", err)
	}
	if p.tip == "" {
		return cmdutil.Env("run %s has no branch muster/%s: nothing to publish", p.id, p.id)
	}
	if r != nil && r.Final != "" && r.Final != p.tip {
		return cmdutil.Env("the run branch muster/%s is at %s, not at %s where the receipt sealed it: muster verify %s says what changed",
			p.id, textsafe.Short(p.tip), textsafe.Short(r.Final), p.id)
	}
	if path := cmdutil.PlanCopy(p.repo.RunDir(p.id)); path != "" {
		if plan, err := planfile.Load(path); err == nil {
			p.plan = plan
		}
	}
	p.base = strings.TrimPrefix(p.o.Base, "refs/heads/")
	if p.base == "" {
		p.base = strings.TrimPrefix(runRef(events), "refs/heads/")
	}
	if p.base == "" {
		return cmdutil.Invalid("run %s started on a detached HEAD: name the base branch with --base BRANCH", p.id)
	}
	return nil
}

// checkOutcome refuses a run with a task that did not succeed, unless
// the pull request is a draft.
func (p *publisher) checkOutcome() error {
	var bad []string
	for _, id := range p.fold.Order {
		if t := p.fold.Tasks[id]; t.State != muster.StateSucceeded {
			bad = append(bad, fmt.Sprintf("%s (%s)", id, t.State))
		}
	}
	if len(bad) == 0 || p.o.Draft {
		return nil
	}
	return &muster.Error{Code: muster.CodeFailed, Message: fmt.Sprintf(
		"run %s has tasks that did not succeed: %s; muster resume %s can finish them, or --draft opens a draft pull request as it is",
		p.id, strings.Join(bad, ", "), p.id)}
}

func runRef(events []muster.Event) string {
	for _, e := range events {
		if e.Type == muster.EvRunStarted {
			return e.Ref
		}
	}
	return ""
}

// connect finds the remote, the GitHub repository and the token.
func (p *publisher) connect(ctx context.Context) error {
	url, err := p.onGitHub(ctx)
	if err != nil {
		return err
	}
	remoteSlug := slugOf(url)
	p.slug = p.o.GitHubRepo
	if p.slug == "" {
		p.slug = p.o.Getenv("GITHUB_REPOSITORY")
	}
	if p.slug == "" {
		p.slug = remoteSlug
	}
	if p.slug == "" {
		return cmdutil.Invalid("cannot tell the GitHub repository from the remote %s's URL: pass --github-repo OWNER/NAME or set GITHUB_REPOSITORY", p.o.Remote)
	}
	p.owner, _, _ = strings.Cut(p.slug, "/")
	if o, _, ok := strings.Cut(remoteSlug, "/"); ok && o != "" {
		p.owner = o
	}
	api := p.o.Getenv("GITHUB_API_URL")
	// Bad input first: the repository and the API base are checked
	// before the token is looked for.
	if _, err := forge.NewGitHub(api, "", p.slug, nil); err != nil {
		return cmdutil.Invalid("%w", err)
	}
	if p.token = findToken(ctx, p.o.Getenv); p.token == "" {
		return cmdutil.Env("no GitHub token: set GITHUB_TOKEN or GH_TOKEN, or log in with gh auth login")
	}
	p.red = p.red.With(p.token)
	f, err := forge.NewGitHub(api, p.token, p.slug, nil)
	if err != nil {
		return cmdutil.Invalid("%w", err)
	}
	p.forge = f
	if p.o.Exe == "" {
		if p.o.Exe, err = os.Executable(); err != nil {
			return cmdutil.Env("cannot find muster's own executable for GIT_ASKPASS: %w", err)
		}
	}
	return nil
}

// onGitHub refuses a remote any of whose URLs (to fetch and to push,
// rewritten as git rewrites them) is on another host than GitHub's,
// before anything is sent: the token goes to GitHub only. It returns the
// remote's (first) URL.
func (p *publisher) onGitHub(ctx context.Context) (string, error) {
	urls, err := git.RemoteURLs(ctx, p.repo.Top, p.o.Remote)
	if err == nil && len(urls) == 0 {
		err = errors.New("it has no URL")
	}
	if err != nil {
		return "", cmdutil.Invalid("--remote %s: %w", p.o.Remote, err)
	}
	gh := GitHubHost(p.o.Getenv)
	for _, u := range urls {
		if h := remoteHost(u); h != "" && h != gh {
			return "", cmdutil.Invalid("the remote %s is on %s, not on %s where the pull request opens: muster pr pushes only to GitHub, which alone gets the token; pass --remote NAME of a remote on %s (GitHub Enterprise: set GITHUB_SERVER_URL or GITHUB_API_URL)",
				p.o.Remote, textsafe.Clip(textsafe.Sanitize(h), 100), gh, gh)
		}
	}
	return urls[0], nil
}

// redact removes the token from an error's text, keeping its code.
func (p *publisher) redact(err error) error {
	if err == nil || p.red.Len() == 0 {
		return err
	}
	msg := err.Error()
	if clean := p.red.String(msg); clean != msg {
		return &muster.Error{Code: muster.ErrorCode(err), Message: clean}
	}
	return err
}

func report(io *cmdutil.IOStreams, asJSON bool, res *published) {
	if asJSON {
		_ = cmdutil.WriteJSON(io.Out, res)
		return
	}
	for _, pl := range res.Pulls {
		// The URL is the API's answer: printed without escape sequences.
		pl.URL = textsafe.Sanitize(pl.URL)
		what := pl.Branch
		if pl.Task != "" {
			what = pl.Task + " (" + pl.Branch + ")"
		}
		switch pl.Action {
		case opMerged:
			fmt.Fprintf(io.Out, "pull request #%d for %s is merged already: left alone\n  %s\n", pl.Number, what, pl.URL)
		default:
			fmt.Fprintf(io.Out, "%s pull request #%d for %s onto %s at %s\n  %s\n", pl.Action, pl.Number, what, pl.Base, textsafe.Short(pl.Commit), pl.URL)
		}
	}
}

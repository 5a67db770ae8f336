// Package forge talks to code hosts about pull requests: muster.Forge
// for GitHub's REST API (github.com/google/go-github), so that `muster
// pr` can push a run and open, update and follow its pull requests.
// Another host (GitLab) is another type here behind the same interface.
package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v84/github"

	"github.com/muster-run/muster"
)

// DefaultGitHubAPI is GitHub's public API, used when GITHUB_API_URL is
// not set.
const DefaultGitHubAPI = "https://api.github.com"

// GitHub is a repository on GitHub (or GitHub Enterprise, or a test
// stand-in: the API base is whatever the caller names).
type GitHub struct {
	c           *gh.Client
	owner, repo string
}

var _ muster.Forge = (*GitHub)(nil)

// NewGitHub returns the GitHub repository ownerRepo ("OWNER/NAME") at the
// REST API base apiURL (GITHUB_API_URL exactly: the public API,
// "https://HOST/api/v3" for Enterprise), authenticated by token. hc may
// be nil.
func NewGitHub(apiURL, token, ownerRepo string, hc *http.Client) (*GitHub, error) {
	owner, repo, ok := strings.Cut(ownerRepo, "/")
	if !ok || !nameOK(owner) || !nameOK(repo) {
		return nil, fmt.Errorf("repository %q is not OWNER/NAME (letters, digits, '-', '_' and '.')", ownerRepo)
	}
	if apiURL == "" {
		apiURL = DefaultGitHubAPI
	}
	base, err := url.Parse(strings.TrimRight(apiURL, "/") + "/")
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("API base %q is not an http(s) URL", apiURL)
	}
	if base.User != nil {
		return nil, errors.New("the API base must not carry credentials: set GITHUB_TOKEN instead")
	}
	c := gh.NewClient(hc)
	if token != "" {
		c = c.WithAuthToken(token)
	}
	c.BaseURL = base
	c.UserAgent = "muster"
	return &GitHub{c: c, owner: owner, repo: repo}, nil
}

// nameOK reports whether s can be an owner's or a repository's name on
// GitHub: it goes into the API's paths as it is, so '/', '?', '#', '%',
// spaces and the dot segments "." and ".." (which would reach another
// endpoint with the token) are refused.
func nameOK(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !nameRune(r) {
			return false
		}
	}
	return true
}

// nameRune reports whether r may be in a GitHub owner's or repository's
// name: an ASCII letter or digit, '-', '_' or '.'.
func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// Check implements muster.Forge: GET /repos/OWNER/NAME.
func (g *GitHub) Check(ctx context.Context) error {
	if _, _, err := g.c.Repositories.Get(ctx, g.owner, g.repo); err != nil {
		return apiError("look up the repository", err)
	}
	return nil
}

// FindPull implements muster.Forge.
func (g *GitHub) FindPull(ctx context.Context, head string) (*muster.PullRequest, error) {
	opts := &gh.PullRequestListOptions{Head: head, State: "all", Sort: "created", Direction: "desc",
		ListOptions: gh.ListOptions{PerPage: 20}}
	prs, _, err := g.c.PullRequests.List(ctx, g.owner, g.repo, opts)
	if err != nil {
		return nil, apiError("list pull requests", err)
	}
	// The API filters by head already; a stand-in or an old server may
	// not, so the head is checked here too. An open one wins.
	var best *gh.PullRequest
	for _, p := range prs {
		if p.GetHead().GetRef() != branchOf(head) {
			continue
		}
		if best == nil || (p.GetState() == "open" && best.GetState() != "open") {
			best = p
		}
	}
	if best == nil {
		return nil, nil
	}
	return pull(best), nil
}

// CreatePull implements muster.Forge.
func (g *GitHub) CreatePull(ctx context.Context, p muster.PullSpec) (*muster.PullRequest, error) {
	pr, _, err := g.c.PullRequests.Create(ctx, g.owner, g.repo, &gh.NewPullRequest{
		Title: gh.Ptr(p.Title), Head: gh.Ptr(p.Head), Base: gh.Ptr(p.Base), Body: gh.Ptr(p.Body),
		Draft: gh.Ptr(p.Draft), MaintainerCanModify: gh.Ptr(false)})
	if err != nil {
		return nil, apiError("open the pull request", err)
	}
	return pull(pr), nil
}

// UpdatePull implements muster.Forge.
func (g *GitHub) UpdatePull(ctx context.Context, number int, p muster.PullSpec, reopen bool) (*muster.PullRequest, error) {
	edit := &gh.PullRequest{Title: gh.Ptr(p.Title), Body: gh.Ptr(p.Body)}
	if p.Base != "" {
		edit.Base = &gh.PullRequestBranch{Ref: gh.Ptr(p.Base)}
	}
	if reopen {
		edit.State = gh.Ptr("open")
	}
	pr, _, err := g.c.PullRequests.Edit(ctx, g.owner, g.repo, number, edit)
	if err != nil {
		return nil, apiError(fmt.Sprintf("update pull request #%d", number), err)
	}
	return pull(pr), nil
}

// Comment implements muster.Forge.
func (g *GitHub) Comment(ctx context.Context, number int, body string) error {
	_, _, err := g.c.Issues.CreateComment(ctx, g.owner, g.repo, number, &gh.IssueComment{Body: gh.Ptr(body)})
	if err != nil {
		return apiError(fmt.Sprintf("comment on pull request #%d", number), err)
	}
	return nil
}

// Feedback implements muster.Forge: failed check runs and commit
// statuses at sha, review comments, and reviews that request changes.
func (g *GitHub) Feedback(ctx context.Context, number int, sha string) (*muster.Feedback, error) {
	f := &muster.Feedback{}
	if err := g.checks(ctx, sha, f); err != nil {
		return nil, err
	}
	if err := g.statuses(ctx, sha, f); err != nil {
		return nil, err
	}
	if err := g.comments(ctx, number, f); err != nil {
		return nil, err
	}
	if err := g.reviews(ctx, number, f); err != nil {
		return nil, err
	}
	return f, nil
}

// maxPages bounds every listing: a pull request with more feedback than
// this is answered from its first pages.
const maxPages = 10

func (g *GitHub) checks(ctx context.Context, sha string, f *muster.Feedback) error {
	opts := &gh.ListCheckRunsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 0; page < maxPages; page++ {
		res, resp, err := g.c.Checks.ListCheckRunsForRef(ctx, g.owner, g.repo, sha, opts)
		if err != nil {
			return apiError("list check runs", err)
		}
		for _, r := range res.CheckRuns {
			if r.GetStatus() != "completed" {
				f.Pending = true
				continue
			}
			switch r.GetConclusion() {
			case "failure", "timed_out", "cancelled", "action_required":
				out := r.GetOutput()
				summary := strings.TrimSpace(strings.Join(nonEmpty(out.GetTitle(), out.GetSummary(), out.GetText()), "\n"))
				f.Checks = append(f.Checks, muster.CheckResult{Name: r.GetName(), Summary: summary, URL: r.GetHTMLURL()})
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return nil
		}
		opts.Page = resp.NextPage
	}
	return nil
}

func (g *GitHub) statuses(ctx context.Context, sha string, f *muster.Feedback) error {
	st, _, err := g.c.Repositories.GetCombinedStatus(ctx, g.owner, g.repo, sha, &gh.ListOptions{PerPage: 100})
	if err != nil {
		return apiError("read commit statuses", err)
	}
	for _, s := range st.Statuses {
		switch s.GetState() {
		case "pending":
			f.Pending = true
		case "failure", "error":
			f.Checks = append(f.Checks, muster.CheckResult{Name: s.GetContext(), Summary: s.GetDescription(), URL: s.GetTargetURL()})
		}
	}
	return nil
}

func (g *GitHub) comments(ctx context.Context, number int, f *muster.Feedback) error {
	opts := &gh.PullRequestListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 0; page < maxPages; page++ {
		cs, resp, err := g.c.PullRequests.ListComments(ctx, g.owner, g.repo, number, opts)
		if err != nil {
			return apiError("list review comments", err)
		}
		for _, c := range cs {
			line := c.GetLine()
			if line == 0 {
				line = c.GetOriginalLine()
			}
			f.Comments = append(f.Comments, muster.ReviewComment{ID: c.GetID(), Author: c.GetUser().GetLogin(),
				Association: c.GetAuthorAssociation(), Path: c.GetPath(), Line: line, Body: c.GetBody(),
				Time: c.GetCreatedAt().Time})
		}
		if resp == nil || resp.NextPage == 0 {
			return nil
		}
		opts.Page = resp.NextPage
	}
	return nil
}

func (g *GitHub) reviews(ctx context.Context, number int, f *muster.Feedback) error {
	opts := &gh.ListOptions{PerPage: 100}
	// The latest review of each author decides whether they still
	// request changes.
	latest := map[string]*gh.PullRequestReview{}
	var order []string
	for page := 0; page < maxPages; page++ {
		rs, resp, err := g.c.PullRequests.ListReviews(ctx, g.owner, g.repo, number, opts)
		if err != nil {
			return apiError("list reviews", err)
		}
		for _, r := range rs {
			switch r.GetState() {
			case "CHANGES_REQUESTED", "APPROVED", "DISMISSED":
			default:
				continue
			}
			who := r.GetUser().GetLogin()
			if _, ok := latest[who]; !ok {
				order = append(order, who)
			}
			latest[who] = r
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	for _, who := range order {
		r := latest[who]
		if r.GetState() != "CHANGES_REQUESTED" {
			continue
		}
		f.Comments = append(f.Comments, muster.ReviewComment{ID: r.GetID(), Author: who,
			Association: r.GetAuthorAssociation(), Body: r.GetBody(), Time: r.GetSubmittedAt().Time})
	}
	return nil
}

func pull(p *gh.PullRequest) *muster.PullRequest {
	state := p.GetState()
	if p.GetMerged() || p.MergedAt != nil {
		state = muster.PullMerged
	}
	return &muster.PullRequest{Number: p.GetNumber(), URL: p.GetHTMLURL(), State: state,
		Head: p.GetHead().GetRef(), HeadSHA: p.GetHead().GetSHA(), Base: p.GetBase().GetRef(), Body: p.GetBody()}
}

// branchOf is the branch of a head ("owner:branch" or "branch").
func branchOf(head string) string {
	if _, b, ok := strings.Cut(head, ":"); ok {
		return b
	}
	return head
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

// ErrUnauthorized is an API answer of 401 or 403: the token is missing,
// wrong, or lacks the permission.
var ErrUnauthorized = errors.New("the GitHub API refused the token")

// ErrNotFound is an API answer of 404: the repository (or what was
// asked of it) is not there, or the token may not see it.
var ErrNotFound = errors.New("not found")

// ErrInvalid is an API answer of 422: GitHub refused what was asked (a
// base branch it does not have, a head with no commit the base lacks).
var ErrInvalid = errors.New("GitHub refused it")

// refusals lists a 422's reasons: " (base invalid; ...)".
func refusals(es []gh.Error) string {
	var out []string
	for _, e := range es {
		if r := strings.TrimSpace(strings.Join(nonEmpty(e.Field, e.Code, e.Message), " ")); r != "" {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

// apiError says what failed, keeping the status for callers: 401 and 403
// wrap ErrUnauthorized, 404 ErrNotFound, 422 ErrInvalid. go-github's errors carry the
// request URL, never the token.
func apiError(what string, err error) error {
	var re *gh.ErrorResponse
	if errors.As(err, &re) && re.Response != nil {
		code := re.Response.StatusCode
		msg := re.Message
		if code == http.StatusUnauthorized || code == http.StatusForbidden {
			return fmt.Errorf("%s: %w (HTTP %d: %s)", what, ErrUnauthorized, code, msg)
		}
		if code == http.StatusNotFound {
			return fmt.Errorf("%s: HTTP 404: %w", what, ErrNotFound)
		}
		if code == http.StatusUnprocessableEntity {
			return fmt.Errorf("%s: HTTP 422: %s%s: %w", what, msg, refusals(re.Errors), ErrInvalid)
		}
		if code >= 500 {
			return fmt.Errorf("%s: HTTP %d: %s: GitHub's server failed; run muster pr again later (it finds what it already did)", what, code, msg)
		}
		return fmt.Errorf("%s: HTTP %d: %s: %w", what, code, msg, err)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syn) || errors.As(err, &typ) {
		return fmt.Errorf("%s: the API's answer is not GitHub's JSON (is GITHUB_API_URL GitHub's REST API, such as %s or https://HOST/api/v3?): %w",
			what, DefaultGitHubAPI, err)
	}
	var rl *gh.RateLimitError
	if errors.As(err, &rl) {
		return fmt.Errorf("%s: rate limited until %s: %w", what, rl.Rate.Reset.Format(time.RFC3339), err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

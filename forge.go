package muster

import (
	"context"
	"time"
)

// Forge is a code host's pull requests, as `muster pr` uses them
// (ARCHITECTURE.md §2.1). The forge package implements it for GitHub's
// REST API; another host implements the same methods. Text that comes
// back (titles, bodies, comments, check output) is untrusted.
type Forge interface {
	// Check asks the host for the repository with the credentials given,
	// before anything is pushed: a wrong token, a repository the host
	// does not have (or the token cannot see) and a failing server are
	// told while nothing has changed on the remote.
	Check(ctx context.Context) error
	// FindPull returns the newest pull request whose head is head
	// ("branch", or "owner:branch" for a fork), in any state, or nil.
	FindPull(ctx context.Context, head string) (*PullRequest, error)
	// CreatePull opens a pull request.
	CreatePull(ctx context.Context, p PullSpec) (*PullRequest, error)
	// UpdatePull sets the title, body and base of pull request number,
	// and reopens it when reopen is set.
	UpdatePull(ctx context.Context, number int, p PullSpec, reopen bool) (*PullRequest, error)
	// Comment adds a comment to the conversation of pull request number.
	Comment(ctx context.Context, number int, body string) error
	// Feedback returns what reviewers and checks said about pull request
	// number at commit sha: failed checks and statuses, review comments,
	// and reviews that request changes.
	Feedback(ctx context.Context, number int, sha string) (*Feedback, error)
}

// PullSpec is what muster asks of a pull request.
type PullSpec struct {
	Title string
	Body  string
	Head  string // "branch" or "owner:branch"
	Base  string
	Draft bool
}

// Pull request states.
const (
	PullOpen   = "open"
	PullClosed = "closed"
	PullMerged = "merged"
)

// PullRequest is a pull request as the forge reports it.
type PullRequest struct {
	Number  int
	URL     string
	State   string // PullOpen, PullClosed or PullMerged
	Head    string // the head branch's name
	HeadSHA string
	Base    string
	Body    string
}

// Feedback is what a pull request's checks and reviewers said.
type Feedback struct {
	Checks   []CheckResult
	Comments []ReviewComment
	// Pending is set while a check has not finished.
	Pending bool
}

// CheckResult is one failed check run or commit status.
type CheckResult struct {
	Name    string
	Summary string // untrusted: the check's title, summary and text
	URL     string
}

// ReviewComment is one review comment (on a file and line) or one
// review that requests changes (Path empty).
type ReviewComment struct {
	ID     int64
	Author string
	// Association is the author's relation to the repository, as GitHub
	// names it: OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE, ...
	Association string
	Path        string
	Line        int
	Body        string // untrusted
	Time        time.Time
}

package git

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Publishing a run (`muster pr`): these calls run in the user's
// repository with the user's own remotes and credentials; env adds to
// the environment (GIT_ASKPASS for a token), never to the arguments, so
// no credential is on a command line.

// RemoteURLs returns every URL git reaches the remote by, to fetch
// (ls-remote) and to push: its urls and pushurls, with insteadOf and
// pushInsteadOf applied.
func RemoteURLs(ctx context.Context, repo, name string) ([]string, error) {
	if strings.HasPrefix(name, "-") {
		return nil, fmt.Errorf("remote %q is not a remote name", name)
	}
	var urls []string
	for _, args := range [][]string{{"remote", "get-url", "--all", "--", name}, {"remote", "get-url", "--push", "--all", "--", name}} {
		out, err := run(ctx, cmd{dir: repo, args: args, readOnly: true})
		if exitCode(err) == 2 {
			return nil, fmt.Errorf("the repository has no remote %q", name)
		}
		if err != nil {
			return nil, err
		}
		for _, u := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if u != "" && !slices.Contains(urls, u) {
				urls = append(urls, u)
			}
		}
	}
	return urls, nil
}

// RemoteBranch returns the commit the remote's branch points at, or ""
// when the remote has no such branch.
func RemoteBranch(ctx context.Context, repo, remote, branch string, env []string) (string, error) {
	out, err := line(ctx, cmd{dir: repo, env: quiet(env), readOnly: true,
		args: []string{"ls-remote", "--refs", "--", remote, "refs/heads/" + branch}})
	if err != nil {
		return "", fmt.Errorf("read %s's branch %s: %w", remote, branch, err)
	}
	for _, l := range strings.Split(out, "\n") {
		sha, ref, ok := strings.Cut(l, "\t")
		if ok && ref == "refs/heads/"+branch {
			return sha, nil
		}
	}
	return "", nil
}

// Contains reports whether the user's repository has commit and it is
// an ancestor of (or is) tip.
func Contains(ctx context.Context, repo, tip, commit string) (bool, error) {
	if _, err := line(ctx, cmd{dir: repo, args: []string{"cat-file", "-e", commit + "^{commit}"}, readOnly: true}); err != nil {
		return false, nil
	}
	_, err := run(ctx, cmd{dir: repo, args: []string{"merge-base", "--is-ancestor", commit, tip}, readOnly: true})
	if exitCode(err) == 1 {
		return false, nil
	}
	return err == nil, err
}

// Push is one push of a commit to a branch of a remote: never forced.
type Push struct {
	Commit string
	Branch string
}

// ErrNotFastForward is a push the remote refused because its branch is
// not an ancestor of the commit pushed.
var ErrNotFastForward = errors.New("the remote branch has moved: not a fast-forward")

// PushBranches pushes each commit to its branch on remote in one atomic
// push, fast-forward only. The user's hooks (pre-push) run, as with
// their own pushes.
func PushBranches(ctx context.Context, repo, remote string, pushes []Push, env []string) error {
	if len(pushes) == 0 {
		return nil
	}
	args := []string{"push", "--porcelain", "--atomic", "--", remote}
	for _, p := range pushes {
		args = append(args, p.Commit+":refs/heads/"+p.Branch)
	}
	_, err := run(ctx, cmd{dir: repo, env: quiet(env), args: args, hooks: true})
	var ge *GitError
	if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "non-fast-forward") || strings.Contains(ge.Stderr, "fetch first")) {
		return fmt.Errorf("push to %s: %w", remote, ErrNotFastForward)
	}
	return err
}

// quiet keeps git from asking at a terminal: a missing credential is an
// error, never a prompt that hangs.
func quiet(env []string) []string {
	return append([]string{"GIT_TERMINAL_PROMPT=0"}, env...)
}

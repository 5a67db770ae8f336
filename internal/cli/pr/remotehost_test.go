package pr_test

import (
	"context"
	"strings"
	"testing"
)

// TestPRRefusesARemoteOffGitHub: a remote on another host than the
// GitHub the pull request opens on (a mirror, another forge) is bad
// input (exit 2) naming both hosts, before any API request or push: the
// token would otherwise go to that host as the push's password.
func TestPRRefusesARemoteOffGitHub(t *testing.T) {
	f := newFixture(t, threePlan)
	good := f.git(f.dir, "remote", "get-url", "origin")
	for _, setup := range [][][]string{
		{{"remote", "set-url", "origin", "https://gitlab.example/octo/app.git"}},
		{{"remote", "set-url", "origin", "git@gitlab.example:octo/app.git"}},
		// A push URL or a second URL elsewhere, which git push and
		// ls-remote use too, and a URL git reaches but muster cannot read.
		{{"config", "remote.origin.pushurl", "https://gitlab.example/octo/app.git"}},
		{{"config", "--add", "remote.origin.url", "https://gitlab.example/octo/app.git"}},
		{{"config", "remote.origin.pushurl", "https://gitlab.example/o/r%zz.git"}},
	} {
		for _, args := range setup {
			f.git(f.dir, args...)
		}
		out, code := f.muster(context.Background(), nil, "pr")
		if code != 2 || !strings.Contains(out, "127.0.0.1") || !strings.Contains(out, "--remote") {
			t.Errorf("git %q: exit %d, want 2 naming GitHub's host and --remote:\n%s", setup, code, out)
		}
		f.git(f.dir, "remote", "remove", "origin")
		f.git(f.dir, "remote", "add", "origin", good)
	}
	if n := len(f.api.requests); n != 0 {
		t.Errorf("%d API requests for a remote off GitHub, want none", n)
	}
}

// TestPRFromNotALogin: a --from value that is no GitHub login (an empty
// one from "a,,b", a path) is bad input (exit 2) naming it, before any
// request.
func TestPRFromNotALogin(t *testing.T) {
	f := newFixture(t, threePlan)
	for _, from := range []string{"octocat,,hubot", "../x", "octo cat"} {
		out, code := f.muster(context.Background(), nil, "pr", "--follow", "--once", "--from", from)
		if code != 2 || !strings.Contains(out, "--from") || !strings.Contains(out, "not a GitHub login") {
			t.Errorf("--from %q: exit %d, want 2 naming --from:\n%s", from, code, out)
		}
	}
	if n := len(f.api.requests); n != 0 {
		t.Errorf("%d API requests for a bad --from, want none", n)
	}
}

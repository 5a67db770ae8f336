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
	for _, url := range []string{"https://gitlab.example/octo/app.git", "git@gitlab.example:octo/app.git"} {
		f.git(f.dir, "remote", "set-url", "origin", url)
		out, code := f.muster(context.Background(), nil, "pr")
		if code != 2 || !strings.Contains(out, "gitlab.example") || !strings.Contains(out, "127.0.0.1") || !strings.Contains(out, "--remote") {
			t.Errorf("remote %s: exit %d, want 2 naming both hosts and --remote:\n%s", url, code, out)
		}
	}
	if n := len(f.api.requests); n != 0 {
		t.Errorf("%d API requests for a remote off GitHub, want none", n)
	}
}

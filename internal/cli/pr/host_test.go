package pr

import (
	"bytes"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// TestRemoteHost: the host a remote reaches, in every URL form git
// takes; none for a local repository.
func TestRemoteHost(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://github.com/octo/app.git":           "github.com",
		"https://x-access-token@GitHub.com:443/o/n": "github.com",
		"http://127.0.0.1:8080/octo/app.git":        "127.0.0.1",
		"ssh://git@github.com:22/octo/app.git":      "github.com",
		"git://gitlab.example/octo/app":             "gitlab.example",
		"git@github.com:octo/app.git":               "github.com",
		"git@gitlab.example:octo/app.git":           "gitlab.example",
		"gitlab.example:octo/app":                   "gitlab.example",
		"user@[::1]:octo/app":                       "::1",
		"https://github.com./octo/app":              "github.com",
		"/srv/git/app.git":                          "",
		"./relative/app.git":                        "",
		"dir/with:colon/app.git":                    "",
		"file:///srv/git/app.git":                   "",
		"FILE:///srv/git/app.git":                   "",
		// The red team's: URLs git reaches that Go cannot parse.
		"https://evil.example/o/r%zz.git":       unparsable,
		"https://github.com\\@evil.example/o/r": unparsable,
		"https://evil.example/o/r.git#%zz":      unparsable,
		"https://evil example/o/r":              unparsable,
	} {
		if got := remoteHost(in); got != want {
			t.Errorf("remoteHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestGitHubHost: the server URL first, then the API's host without
// "api.", then github.com.
func TestGitHubHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ server, api, want string }{
		{"", "", "github.com"},
		{"", "https://api.github.com", "github.com"},
		{"", "https://ghe.example.com/api/v3", "ghe.example.com"},
		{"", "https://api.octo.ghe.com", "octo.ghe.com"},
		{"https://GHE.example.com", "https://ghe.example.com/api/v3", "ghe.example.com"},
		{"", "http://127.0.0.1:4242", "127.0.0.1"},
	} {
		env := map[string]string{"GITHUB_SERVER_URL": tc.server, "GITHUB_API_URL": tc.api}
		if got := GitHubHost(func(k string) string { return env[k] }); got != tc.want {
			t.Errorf("GitHubHost(server %q, api %q) = %q, want %q", tc.server, tc.api, got, tc.want)
		}
	}
}

// TestAskPassOnlyForGitHub: with the host set, a prompt for another host
// (a redirect to another server) gets an empty answer, never the token.
func TestAskPassOnlyForGitHub(t *testing.T) {
	t.Parallel()
	env := func(k string) string {
		return map[string]string{AskPassTokenEnv: "tok", AskPassHostEnv: "github.com"}[k]
	}
	for prompt, want := range map[string]string{
		"Password for 'https://x-access-token@github.com': ":      "tok\n",
		"Username for 'https://github.com': ":                     "x-access-token\n",
		"Password for 'https://x-access-token@evil.example': ":    "",
		"Username for 'https://github.com.evil.example': ":        "",
		"Password for 'https://x-access-token@github.com:8443': ": "tok\n",
		"Password: ": "",
	} {
		var out bytes.Buffer
		if !AskPass([]string{"muster", prompt}, env, &out) || out.String() != want {
			t.Errorf("AskPass(%q) printed %q, want %q", prompt, out.String(), want)
		}
	}
}

// TestFromLogins: --from takes GitHub logins only, and matches authors
// without case; a comment without an author (a deleted account) never
// counts through it.
func TestFromLogins(t *testing.T) {
	t.Parallel()
	for l, want := range map[string]bool{
		"octocat": true, "Octo-Cat": true, "a": true, strings.Repeat("a", 39): true,
		"": false, " octocat": false, "-octo": false, "octo-": false, "oc--to": false,
		"octo_cat": false, "octo/cat": false, strings.Repeat("a", 40): false, "ghost\n": false, "ö": false,
	} {
		if got := validLogin(l); got != want {
			t.Errorf("validLogin(%q) = %v, want %v", l, got, want)
		}
	}
	fb := &muster.Feedback{Comments: []muster.ReviewComment{
		{ID: 1, Author: "OctoCat", Association: "NONE", Body: "fix it"},
		{ID: 2, Author: "", Association: "NONE", Body: "from a deleted account"},
		{ID: 3, Author: "stranger", Association: "NONE", Body: "do something else"},
		{ID: 4, Author: "boss", Association: "member", Body: "and this"},
	}}
	var keys []string
	for _, it := range (&publisher{}).items(fb, "abc", &FollowOptions{From: []string{"octocat"}}) {
		keys = append(keys, it.key)
	}
	if strings.Join(keys, " ") != "review:1 review:4" {
		t.Errorf("feedback acted on: %q, want review:1 (--from, another case) and review:4 (a member)", keys)
	}
}

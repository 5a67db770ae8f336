package pr

import (
	"bytes"
	"testing"
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

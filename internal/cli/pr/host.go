package pr

import (
	"net"
	"net/url"
	"strings"
)

// AskPassHostEnv names, for muster as git's GIT_ASKPASS, the one host
// it gives the token to (GitHubHost): a prompt for any other (a remote
// on another host, a redirect) gets no answer.
const AskPassHostEnv = "MUSTER_ASKPASS_HOST"

// GitHubHost is the host of the GitHub the pull request opens on, which
// alone may receive the token: GITHUB_SERVER_URL's (GitHub Actions sets
// it), else GITHUB_API_URL's without its "api." (api.github.com is
// github.com's; GitHub Enterprise serves both on one host), else
// github.com.
func GitHubHost(getenv func(string) string) string {
	if h := urlHost(getenv("GITHUB_SERVER_URL")); h != "" {
		return h
	}
	if h := urlHost(getenv("GITHUB_API_URL")); h != "" {
		return strings.TrimPrefix(h, "api.")
	}
	return "github.com"
}

// unparsable stands for the host of a remote URL that names one but
// that Go cannot parse (git may still reach it: a stray percent sign, a
// backslash in the user name): never GitHub's.
const unparsable = "(a URL muster cannot read)"

// remoteHost is the host a git remote's URL reaches over the network
// (https://[USER@]HOST[:PORT]/..., ssh://[USER@]HOST[:PORT]/...,
// git://HOST/..., scp-like [USER@]HOST:PATH), lower-cased, without its
// port; "" for a local repository (a path, file://); unparsable for a
// URL with a scheme whose host cannot be read.
func remoteHost(remote string) string {
	if strings.Contains(remote, "://") {
		if strings.HasPrefix(strings.ToLower(remote), "file://") {
			return ""
		}
		if h := urlHost(remote); h != "" {
			return h
		}
		return unparsable
	}
	// scp-like: [USER@]HOST:PATH, HOST maybe in brackets, the colon
	// before any slash (git's own rule); anything else is a path.
	rest := remote
	if at, slash := strings.IndexByte(rest, '@'), strings.IndexByte(rest, '/'); at >= 0 && (slash < 0 || at < slash) {
		rest = rest[at+1:]
	}
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 || !strings.HasPrefix(rest[end+1:], ":") {
			return ""
		}
		return normHost(rest[1:end])
	}
	colon, slash := strings.IndexByte(rest, ':'), strings.IndexByte(rest, '/')
	if colon <= 0 || slash >= 0 && slash < colon {
		return ""
	}
	return normHost(rest[:colon])
}

// urlHost is a URL's host name, lower-cased, without port ("" when it
// has none).
func urlHost(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return ""
	}
	return normHost(u.Hostname())
}

func normHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// promptHost is the host of the URL in git's credential prompt
// ("Password for 'https://USER@HOST': "), "" when it names none.
func promptHost(prompt string) string {
	_, rest, ok := strings.Cut(prompt, "'")
	if !ok {
		return ""
	}
	u, _, ok := strings.Cut(rest, "'")
	if !ok {
		return ""
	}
	return urlHost(u)
}

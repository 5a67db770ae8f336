// Package redact is muster's one redactor: it removes secrets from
// everything muster keeps or passes on (the journal, the receipt, the run's
// notes, prompts, views, reports and error messages), whatever executor
// kind produced the text. It also holds the policy of which environment
// variables are credentials, so that the environment scrub and the
// redaction agree (ARCHITECTURE.md §2.5).
//
// Three things are redacted:
//   - known secret values: the keys named by api_key_env, the values of
//     credential-named variables (of muster's environment and of an
//     executor's env table) and the passwords of URLs in them;
//   - key-shaped strings: sk-…, ghp_…/github_pat_…, glpat-…, xox…-…,
//     AIza…, AWS access key IDs (AKIA…/ASIA…), JWTs and bearer tokens;
//   - the user-info of URLs (scheme://user:password@host).
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Mark replaces each secret.
const Mark = "[redacted]"

// MinSecret is the shortest known value that is redacted: shorter values
// ("1", "yes", "dev") would blank out ordinary words, and are no secrets.
const MinSecret = 6

// keyShaped matches strings that look like API keys or tokens of common
// providers, JWTs and bearer credentials.
var keyShaped = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(?:` +
		`sk-[A-Za-z0-9_-]{16,}` + // OpenAI, Anthropic (sk-ant-…), sk-proj-…
		`|[sr]k_(?:live|test)_[A-Za-z0-9]{10,}` + // Stripe
		`|AIza[0-9A-Za-z_-]{30,}` + // Google
		`|gh[pousr]_[A-Za-z0-9]{20,}` + // GitHub tokens
		`|github_pat_[A-Za-z0-9_]{20,}` + // GitHub fine-grained tokens
		`|glpat-[A-Za-z0-9_-]{20,}` + // GitLab
		`|xox[abprse]-[A-Za-z0-9-]{10,}` + // Slack
		`|(?:AKIA|ASIA)[0-9A-Z]{16}` + // AWS access key IDs
		`|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*` + // JWT
		`)|(?i:bearer\s+)[A-Za-z0-9._~+/=-]{16,}`)
})

// userInfo matches the user-info of a URL: scheme://USER[:PASSWORD]@.
var userInfo = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.-]*://)[^\s/@?#"'<>]+@`) })

// Keys redacts key-shaped strings and URL user-info in s.
func Keys(s string) string {
	if s == "" {
		return s
	}
	if strings.Contains(s, "://") {
		s = userInfo().ReplaceAllString(s, "${1}"+Mark+"@")
	}
	return keyShaped().ReplaceAllString(s, Mark)
}

// HasUserInfo reports whether v holds a URL with user-info (a user name or
// a password before the host).
func HasUserInfo(v string) bool {
	return strings.Contains(v, "://") && userInfo().MatchString(v)
}

// IsSecretName reports whether an environment variable name looks like it
// holds a credential: names ending in _KEY, _TOKEN, _SECRET, _PAT, _DSN or
// _CREDENTIALS, or containing PASSWORD, PASSWD, APIKEY or API_KEY (any case),
// or exactly KEY, TOKEN, SECRET, PAT or DSN.
func IsSecretName(name string) bool {
	u := strings.ToUpper(name)
	switch u {
	case "KEY", "TOKEN", "SECRET", "PAT", "DSN", "PASSWORD", "PASSWD":
		return true
	}
	for _, suf := range []string{"_KEY", "_TOKEN", "_SECRET", "_PAT", "_DSN", "_CREDENTIALS"} {
		if strings.HasSuffix(u, suf) {
			return true
		}
	}
	for _, sub := range []string{"PASSWORD", "PASSWD", "APIKEY", "API_KEY"} {
		if strings.Contains(u, sub) {
			return true
		}
	}
	return false
}

// IsSecret reports whether the variable name=value is a credential: its
// name looks like one (IsSecretName), or its value is a URL with user-info
// (DB_URL=postgres://u:pw@h/db).
func IsSecret(name, value string) bool {
	return IsSecretName(name) || HasUserInfo(value)
}

// Values returns the secret values a variable holds: the whole value of a
// credential (IsSecret), and the user-info and password of each URL in it.
func Values(name, value string) []string {
	var out []string
	if IsSecretName(name) {
		out = append(out, value)
	}
	if strings.Contains(value, "://") {
		for _, m := range userInfo().FindAllStringSubmatchIndex(value, -1) {
			info := value[m[3] : m[1]-1]
			out = append(out, info)
			if u, err := url.Parse("x://" + info + "@h"); err == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok {
					out = append(out, pw)
				}
			}
		}
	}
	return out
}

// Environ returns the secret values of an environment (KEY=VALUE strings),
// except those of the variables named in allow.
func Environ(environ []string, allow ...string) []string {
	var out []string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || slices.Contains(allow, k) {
			continue
		}
		out = append(out, Values(k, v)...)
	}
	return out
}

// Redactor removes known secret values, then key-shaped strings and URL
// user-info, from text. The nil Redactor redacts key-shaped strings and
// user-info only. A Redactor is immutable and safe for concurrent use.
type Redactor struct {
	values []string
	r      *strings.Replacer
}

// New returns a redactor of the given secret values (those shorter than
// MinSecret are ignored).
func New(values ...string) *Redactor {
	return (*Redactor)(nil).With(values...)
}

// With returns a redactor of r's values and the given ones.
func (r *Redactor) With(values ...string) *Redactor {
	seen := map[string]bool{}
	var all []string
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) >= MinSecret && !seen[v] && !strings.Contains(Mark, v) {
			seen[v] = true
			all = append(all, v)
		}
	}
	if r != nil {
		for _, v := range r.values {
			add(v)
		}
	}
	for _, v := range values {
		add(v)
	}
	// Longer values first: a secret that contains another is replaced whole.
	sort.SliceStable(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	out := &Redactor{values: all}
	if len(all) > 0 {
		pairs := make([]string, 0, 2*len(all))
		for _, v := range all {
			pairs = append(pairs, v, Mark)
		}
		out.r = strings.NewReplacer(pairs...)
	}
	return out
}

// String returns s with every secret replaced by Mark.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	if r != nil && r.r != nil {
		s = r.r.Replace(s)
	}
	return Keys(s)
}

// Strings redacts each element of ss in place and returns ss.
func (r *Redactor) Strings(ss []string) []string {
	for i := range ss {
		ss[i] = r.String(ss[i])
	}
	return ss
}

// Len is the number of known secret values.
func (r *Redactor) Len() int {
	if r == nil {
		return 0
	}
	return len(r.values)
}

package egress

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/muster-run/muster"
)

// API is a provider's wire format.
type API string

// The wire formats the endpoint forwards.
const (
	Anthropic API = "anthropic" // Messages API
	OpenAI    API = "openai"    // Responses and Chat Completions
	Gemini    API = "gemini"    // generateContent
)

// Default endpoints of the providers (over TLS), when an executor sets no
// base_url.
var defaultUpstream = map[API]string{
	Anthropic: "https://api.anthropic.com/v1",
	OpenAI:    "https://api.openai.com/v1",
	Gemini:    "https://generativelanguage.googleapis.com",
}

// Route is where one executor's model requests go and with what key.
type Route struct {
	API      API
	Upstream *url.URL // the real base URL: scheme, host and path
	// Header and Key are the real credential; an empty Key leaves the
	// agent's own authorization (a subscription login) as it is.
	Header string
	Key    string
	// Models are the models the executor may ask for (empty: any).
	Models []string
}

// kindAPI is the wire format each kind's agents speak; kinds not listed
// speak none muster knows (they get a route only with a base_url).
var kindAPI = map[muster.ExecKind]API{
	muster.ExecClaudeCode: Anthropic,
	muster.ExecClaudeACP:  Anthropic,
	muster.ExecCodex:      OpenAI,
	muster.ExecCodexACP:   OpenAI,
	muster.ExecPi:         OpenAI,
	muster.ExecQwen:       OpenAI,
	muster.ExecGemini:     Gemini,
	muster.ExecGeminiACP:  Gemini,
}

// opencodeAPI maps opencode's provider prefix to its wire format.
var opencodeAPI = map[string]API{"anthropic": Anthropic, "openai": OpenAI, "google": Gemini}

// Behind reports whether agents of the kind are put behind the model
// endpoint: every kind that speaks HTTP to a provider from a process
// muster starts. The built-in HTTP kinds call their provider from inside
// muster, and sim calls none.
func Behind(kind muster.ExecKind) bool {
	k := muster.LookupKind(kind)
	return k != nil && (k.Family == muster.FamilyCLI || k.Family == muster.FamilyACP || k.Family == muster.FamilyCommand)
}

// RouteFor returns the route of an invocation of spec asking for model
// ("" for the executor's own), with the key read from keyEnv (the
// variable the adapter would read it from). It returns nil when the
// kind has no route: a command, generic ACP or Copilot executor without
// base_url, whose provider muster cannot know.
func RouteFor(spec *muster.ExecutorSpec, model, keyEnv string) (*Route, error) {
	api, ok := kindAPI[spec.Kind]
	if spec.Kind == muster.ExecOpencode {
		m := model
		if m == "" {
			m = spec.Model
		}
		p, _, _ := strings.Cut(m, "/")
		api, ok = opencodeAPI[p]
		if !ok && spec.BaseURL != "" {
			api, ok = OpenAI, true // an OpenAI-compatible provider
		}
	}
	if !ok && spec.BaseURL == "" {
		return nil, nil
	}
	base := spec.BaseURL
	if base == "" {
		base = defaultUpstream[api]
	}
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("executor %s: base_url %q is not an http(s) URL with a host", spec.Name, base)
	}
	r := &Route{API: api, Upstream: u, Models: models(spec, model)}
	if keyEnv != "" {
		r.Key = os.Getenv(keyEnv)
	}
	switch api {
	case Anthropic:
		r.Header = "X-Api-Key"
	case Gemini:
		r.Header = "X-Goog-Api-Key"
	default:
		r.Header = "Authorization"
	}
	return r, nil
}

// models lists the models an invocation may ask for: the executor's
// model and models and the task's; none (any) when none is set.
func models(spec *muster.ExecutorSpec, model string) []string {
	var out []string
	for _, m := range append([]string{spec.Model, model}, spec.Models...) {
		if m == "" {
			continue
		}
		out = append(out, m)
		if _, bare, ok := strings.Cut(m, "/"); ok {
			out = append(out, bare) // opencode's "provider/model"
		}
	}
	return out
}

// inference are the paths, under the route's base path, of each API's
// inference requests (docs/agents.md lists them per kind). A path may
// repeat the version the base already has ("/v1/messages" under "").
var inference = map[API][]string{
	Anthropic: {"/messages", "/v1/messages", "/messages/count_tokens", "/v1/messages/count_tokens"},
	OpenAI:    {"/responses", "/v1/responses", "/chat/completions", "/v1/chat/completions", "/models", "/v1/models"},
}

// geminiPath is a generateContent request: the model in group 1.
var geminiPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:/v1beta|/v1)?/models/([A-Za-z0-9._-]+):(generateContent|streamGenerateContent|countTokens)$`)
})

// allowedPath reports whether path (the request's, under the route's
// base) is one of the API's inference requests; for Gemini it returns
// the model the path names.
func (r *Route) allowedPath(path string) (ok bool, model string) {
	rel, found := strings.CutPrefix(path, r.Upstream.Path)
	if !found {
		return false, ""
	}
	if r.API == Gemini || r.API == "" {
		if m := geminiPath().FindStringSubmatch(rel); m != nil {
			return true, m[1]
		}
		if r.API == Gemini {
			return false, ""
		}
	}
	apis := []API{r.API}
	if r.API == "" {
		apis = []API{Anthropic, OpenAI}
	}
	for _, a := range apis {
		for _, p := range inference[a] {
			if rel == p {
				return true, ""
			}
		}
	}
	return false, ""
}

// allowedModel reports whether the route lets a request ask for model.
func (r *Route) allowedModel(model string) bool {
	if len(r.Models) == 0 || model == "" {
		return true
	}
	for _, m := range r.Models {
		if m == model {
			return true
		}
	}
	return false
}

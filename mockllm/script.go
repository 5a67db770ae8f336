// Package mockllm is a scripted mock model server. One http.Handler speaks
// the Anthropic Messages API, the OpenAI Responses and Chat Completions APIs
// and the Gemini generateContent API (streaming and not), and answers every
// request from a Script of scenarios: text replies, tool calls, HTTP errors,
// rate limits, usage numbers and delays. It lets real agent CLIs and
// muster's own HTTP agent run offline, in tests, against 127.0.0.1.
//
// The reply is chosen without conversation state: the scenario is the one
// whose marker "[scenario: NAME]" (or Match text) appears in the latest user
// prompt, and the step is the number of tool-result turns since that prompt.
// So client retries, resumed sessions and side requests need no mock state.
package mockllm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
)

// Script is a list of scenarios. The first scenario named "default" (or,
// failing that, a built-in one that answers "OK") serves requests that no
// scenario matches.
type Script struct {
	Scenarios []Scenario `json:"scenarios" yaml:"scenarios"`
}

// Scenario is a conversation: step N answers the request that carries N
// tool-result turns after the latest user prompt.
type Scenario struct {
	// Name is matched by a marker "[scenario: NAME]" in the latest user prompt.
	Name string `json:"name" yaml:"name"`
	// Match, when set, also selects the scenario when the latest user
	// prompt contains it.
	Match string `json:"match,omitempty" yaml:"match,omitempty"`
	// Steps are the replies, in turn order. Requests past the last step get
	// the final text "Done.".
	Steps []Step `json:"steps" yaml:"steps"`
}

// Step is one reply.
type Step struct {
	// Text is the assistant's text ("{{cwd}}" is replaced by the client's
	// working directory when the request names one).
	Text string `json:"text,omitempty" yaml:"text,omitempty"`
	// Tools are tool calls, made in this order. A request that offers no
	// tools gets Text (or "OK") instead.
	Tools []ToolCall `json:"tools,omitempty" yaml:"tools,omitempty"`
	// Status, when not 0 or 200, answers with this HTTP status and an error
	// body in the API's own shape.
	Status int `json:"status,omitempty" yaml:"status,omitempty"`
	// Error is the error message (default: the status text).
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
	// ErrorType overrides the API's error type (e.g. "overloaded_error").
	ErrorType string `json:"error_type,omitempty" yaml:"error_type,omitempty"`
	// RetryAfter sets the retry-after header (seconds, or an HTTP date).
	RetryAfter string `json:"retry_after,omitempty" yaml:"retry_after,omitempty"`
	// Headers are extra response headers.
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	// Times limits an error step: after Times errors the step is skipped
	// (the server counts, per scenario and step). 0: always.
	Times int `json:"times,omitempty" yaml:"times,omitempty"`
	// Usage sets the reported token counts (default: input = request
	// bytes/4, output = reply bytes/4).
	Usage *Usage `json:"usage,omitempty" yaml:"usage,omitempty"`
	// DelayMS waits this long before answering.
	DelayMS int `json:"delay_ms,omitempty" yaml:"delay_ms,omitempty"`
	// Break cuts a streamed reply off after its first events (no terminal
	// event): a stream that breaks mid-way.
	Break bool `json:"break,omitempty" yaml:"break,omitempty"`
	// Raw, when set, is sent as the whole response body as is (status 200),
	// for malformed replies.
	Raw string `json:"raw,omitempty" yaml:"raw,omitempty"`
}

// ToolCall is one tool call of a step.
type ToolCall struct {
	// Name is the tool's name as the client offered it (Write, exec_command,
	// write_file...).
	Name string `json:"name" yaml:"name"`
	// Input is the call's arguments object. "{{cwd}}" inside its strings is
	// replaced by the client's working directory.
	Input map[string]any `json:"input,omitempty" yaml:"input,omitempty"`
	// Custom, when set, makes the call a Responses "custom_tool_call" whose
	// input is this text (Codex's apply_patch); other APIs send it as
	// {"input": Custom}.
	Custom string `json:"custom,omitempty" yaml:"custom,omitempty"`
}

// Usage is the token counts a step reports.
type Usage struct {
	InputTokens      int `json:"input_tokens,omitempty" yaml:"input_tokens,omitempty"`
	OutputTokens     int `json:"output_tokens,omitempty" yaml:"output_tokens,omitempty"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty" yaml:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty" yaml:"cache_write_tokens,omitempty"`
}

// LoadScript reads a script from a JSON (.json) or YAML file. Unknown keys
// are errors; messages name the file (and line, for YAML).
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseScript(path, data)
}

// ParseScript decodes a script; name is used in messages and its extension
// picks the format (".json" JSON, anything else YAML, a superset of JSON).
func ParseScript(name string, data []byte) (*Script, error) {
	var s Script
	if strings.EqualFold(filepath.Ext(name), ".json") {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, jsonLine(data, dec.InputOffset()), err)
		}
	} else if err := yaml.UnmarshalWithOptions(data, &s, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %s", name, yaml.FormatError(err, false, false))
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

func jsonLine(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// Validate checks names and steps.
func (s *Script) Validate() error {
	seen := map[string]bool{}
	for i, sc := range s.Scenarios {
		if sc.Name == "" && sc.Match == "" {
			return fmt.Errorf("scenario %d: needs a name or a match", i+1)
		}
		if sc.Name != "" && seen[sc.Name] {
			return fmt.Errorf("scenario %q: defined twice", sc.Name)
		}
		seen[sc.Name] = true
		for j, st := range sc.Steps {
			if st.Status != 0 && (st.Status < 100 || st.Status > 599) {
				return fmt.Errorf("scenario %q step %d: bad status %d", sc.Name, j+1, st.Status)
			}
			for _, tc := range st.Tools {
				if tc.Name == "" {
					return fmt.Errorf("scenario %q step %d: tool call without a name", sc.Name, j+1)
				}
			}
		}
	}
	return nil
}

var markerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[scenario:\s*([^\]\s]+)\s*\]`) })

// find returns the scenario for a prompt: by marker first, then by Match,
// then "default", else nil.
func (s *Script) find(prompt string) *Scenario {
	if s == nil {
		return nil
	}
	if m := markerRE().FindStringSubmatch(prompt); m != nil {
		for i := range s.Scenarios {
			if s.Scenarios[i].Name == m[1] {
				return &s.Scenarios[i]
			}
		}
	}
	for i := range s.Scenarios {
		if s.Scenarios[i].Match != "" && strings.Contains(prompt, s.Scenarios[i].Match) {
			return &s.Scenarios[i]
		}
	}
	for i := range s.Scenarios {
		if s.Scenarios[i].Name == "default" {
			return &s.Scenarios[i]
		}
	}
	return nil
}

// cwdPatterns find the client's working directory in what it sends.
var cwdPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`Primary working directory: ([^\s<"\\]+)`),
		regexp.MustCompile(`<cwd>([^<]+)</cwd>`),
		regexp.MustCompile(`Working directory: ([^\s<"\\]+)`),
		regexp.MustCompile(`Workspace Directories:\*{0,2}\s*(?:\\n)?\s*-\s*([^\s<"\\]+)`),
		regexp.MustCompile(`MUSTER_WORKTREE=([^\s<"\\]+)`),
		// Copilot CLI's and Qwen Code's environment contexts.
		regexp.MustCompile(`Current working directory: ([^\s<"\\]+)`),
		regexp.MustCompile(`currently working in the directory: ([^\s<"\\]+)`),
	}
})

func findCwd(body string) string {
	for _, re := range cwdPatterns() {
		if m := re.FindStringSubmatch(body); m != nil {
			return m[1]
		}
	}
	return ""
}

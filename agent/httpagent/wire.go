package httpagent

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"

	muster "github.com/muster-run/muster"
)

// wire is one API's conversation: it builds requests and reads replies.
type wire interface {
	request(stream bool) any
	// parse reads a reply; errors are *muster.AgentError (stream errors)
	// or anything else (malformed).
	parse(r io.Reader, stream bool) (*turnResult, error)
	addAssistant(tr *turnResult)
	addResults(rs []toolResult)
}

// turnResult is one model reply.
type turnResult struct {
	model string
	text  string
	calls []toolCall
	usage muster.Usage
	// raw is the API's own form of the reply, replayed in the next request.
	raw any
}

type toolCall struct {
	id   string
	name string
	args string // JSON object
}

type toolResult struct {
	id      string
	name    string
	output  string
	isError bool
}

// toolSpec is a tool offered to the model; params is a JSON schema.
type toolSpec struct {
	name        string
	description string
	params      map[string]any
}

var errNoEnd = errors.New("stream ended before the reply was complete")

// readSSE calls fn for each server-sent event (name may be empty). It
// stops at "data: [DONE]" or when fn returns done.
func readSSE(r io.Reader, fn func(name, data string) (done bool, err error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var name string
	var data []string
	dispatch := func() (bool, error) {
		if len(data) == 0 {
			name = ""
			return false, nil
		}
		d := strings.Join(data, "\n")
		n := name
		name, data = "", data[:0]
		if strings.TrimSpace(d) == "[DONE]" {
			return true, nil
		}
		return fn(n, d)
	}
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		switch {
		case line == "":
			if done, err := dispatch(); done || err != nil {
				return err
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if done, err := dispatch(); done || err != nil {
		return err
	}
	return errNoEnd
}

// ---- OpenAI Chat Completions ----

type chatWire struct {
	model     string
	maxTokens int
	messages  []any
	tools     []any
}

func newChat(model, system, prompt string, tools []toolSpec, maxTokens int) *chatWire {
	w := &chatWire{model: model, maxTokens: maxTokens}
	w.messages = append(w.messages,
		map[string]any{"role": "system", "content": system},
		map[string]any{"role": "user", "content": prompt})
	for _, t := range tools {
		w.tools = append(w.tools, map[string]any{"type": "function", "function": map[string]any{
			"name": t.name, "description": t.description, "parameters": t.params}})
	}
	return w
}

func (w *chatWire) request(stream bool) any {
	r := map[string]any{"model": w.model, "messages": w.messages, "tools": w.tools, "stream": stream}
	if w.maxTokens > 0 {
		// Only when asked: newer OpenAI models refuse max_tokens, and
		// local servers have their own default.
		r["max_tokens"] = w.maxTokens
	}
	if stream {
		r["stream_options"] = map[string]any{"include_usage": true}
	}
	return r
}

type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *chatUsage) usage() muster.Usage {
	c := u.PromptTokensDetails.CachedTokens
	return muster.Usage{InputTokens: u.PromptTokens - c, CacheReadTokens: c, OutputTokens: u.CompletionTokens}
}

type chatToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (w *chatWire) parse(r io.Reader, stream bool) (*turnResult, error) {
	if !stream {
		return parseChatBody(r)
	}
	st := chatStream{tr: &turnResult{}}
	err := readSSE(r, func(_, data string) (bool, error) { return false, st.chunk(data) })
	if err != nil && (!errors.Is(err, errNoEnd) || !st.finished) {
		return nil, err
	}
	tr := st.tr
	tr.text = st.text.String()
	for i, c := range st.calls {
		if c.id == "" {
			c.id = "call_" + string(rune('a'+i%26))
		}
		tr.calls = append(tr.calls, *c)
	}
	return tr, nil
}

// parseChatBody reads a whole (not streamed) chat completion.
func parseChatBody(r io.Reader) (*turnResult, error) {
	tr := &turnResult{}
	var v struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content   *string        `json:"content"`
				ToolCalls []chatToolCall `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage *chatUsage `json:"usage"`
	}
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		return nil, err
	}
	if len(v.Choices) == 0 {
		return nil, errors.New("no choices in the reply")
	}
	tr.model = v.Model
	if c := v.Choices[0].Message.Content; c != nil {
		tr.text = *c
	}
	for _, tc := range v.Choices[0].Message.ToolCalls {
		tr.calls = append(tr.calls, toolCall{id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments})
	}
	if v.Usage != nil {
		tr.usage = v.Usage.usage()
	}
	return tr, nil
}

// chatStream is a streamed chat completion read so far.
type chatStream struct {
	tr       *turnResult // model and usage
	text     strings.Builder
	calls    []*toolCall
	finished bool // a choice said why it finished
}

// chatChunk is one chunk of a streamed chat completion.
type chatChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content   string         `json:"content"`
			ToolCalls []chatToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// chunk folds one chunk's data.
func (st *chatStream) chunk(data string) error {
	var c chatChunk
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return err
	}
	if c.Error != nil {
		return streamError(c.Error.Type, c.Error.Message)
	}
	if c.Model != "" {
		st.tr.model = c.Model
	}
	if c.Usage != nil {
		st.tr.usage = c.Usage.usage()
	}
	for _, ch := range c.Choices {
		st.text.WriteString(ch.Delta.Content)
		for _, d := range ch.Delta.ToolCalls {
			if err := st.toolDelta(d); err != nil {
				return err
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			st.finished = true
		}
	}
	return nil
}

// toolDelta folds a piece of a tool call into the call it continues.
func (st *chatStream) toolDelta(d chatToolCall) error {
	i := d.Index
	if i < 0 || i > 1000 {
		return errors.New("tool call index out of range")
	}
	// Some servers send every call at index 0 (or omit it); a new id at a
	// taken index starts a new call.
	if i < len(st.calls) && d.ID != "" && st.calls[i].id != "" && st.calls[i].id != d.ID {
		i = len(st.calls)
		for j, c := range st.calls {
			if c.id == d.ID {
				i = j
			}
		}
	}
	for len(st.calls) <= i {
		st.calls = append(st.calls, &toolCall{})
	}
	tc := st.calls[i]
	if d.ID != "" {
		tc.id = d.ID
	}
	if d.Function.Name != "" {
		tc.name = d.Function.Name
	}
	tc.args += d.Function.Arguments
	return nil
}

func (w *chatWire) addAssistant(tr *turnResult) {
	m := map[string]any{"role": "assistant", "content": tr.text}
	var tcs []any
	for _, c := range tr.calls {
		tcs = append(tcs, map[string]any{"id": c.id, "type": "function", "function": map[string]any{"name": c.name, "arguments": c.args}})
	}
	if len(tcs) > 0 {
		m["tool_calls"] = tcs
	}
	w.messages = append(w.messages, m)
}

func (w *chatWire) addResults(rs []toolResult) {
	for _, r := range rs {
		w.messages = append(w.messages, map[string]any{"role": "tool", "tool_call_id": r.id, "content": r.output})
	}
}

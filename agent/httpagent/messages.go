package httpagent

import (
	"encoding/json"
	"errors"
	"io"

	muster "github.com/muster-run/muster"
)

// messagesWire is the Anthropic Messages API.
type messagesWire struct {
	model     string
	system    string
	maxTokens int
	messages  []any
	tools     []any
}

func newMessages(model, system, prompt string, tools []toolSpec, maxTokens int) *messagesWire {
	w := &messagesWire{model: model, system: system, maxTokens: maxTokens}
	w.messages = append(w.messages, map[string]any{"role": "user", "content": prompt})
	for _, t := range tools {
		w.tools = append(w.tools, map[string]any{"name": t.name, "description": t.description, "input_schema": t.params})
	}
	return w
}

func (w *messagesWire) request(stream bool) any {
	return map[string]any{"model": w.model, "system": w.system, "messages": w.messages, "tools": w.tools,
		"max_tokens": w.maxTokens, "stream": stream}
}

type messagesUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

type messagesBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

func (w *messagesWire) parse(r io.Reader, stream bool) (*turnResult, error) {
	if !stream {
		return parseMessagesBody(r)
	}
	var st messagesStream
	err := readSSE(r, func(_, data string) (bool, error) { return st.event(data) })
	if err != nil {
		return nil, err
	}
	if !st.stopped {
		return nil, errNoEnd
	}
	content, err := st.content()
	if err != nil {
		return nil, err
	}
	return blocksResult(st.model, content, st.usage), nil
}

// parseMessagesBody reads a whole (not streamed) Messages response.
func parseMessagesBody(r io.Reader) (*turnResult, error) {
	var v struct {
		Type    string          `json:"type"`
		Model   string          `json:"model"`
		Content []messagesBlock `json:"content"`
		Usage   messagesUsage   `json:"usage"`
		Error   *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		return nil, err
	}
	if v.Error != nil {
		return nil, streamError(v.Error.Type, v.Error.Message)
	}
	return blocksResult(v.Model, v.Content, v.Usage), nil
}

// messagesStream is a streamed Messages response read so far: its
// blocks, each tool_use block's input JSON in pieces, and its usage.
type messagesStream struct {
	model   string
	usage   messagesUsage
	blocks  []*messagesBlock
	partial []string
	stopped bool
}

// messagesEvent is one server-sent event of a streamed response.
type messagesEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Model string        `json:"model"`
		Usage messagesUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *messagesBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
	Usage *messagesUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// event folds one event's data; true at message_stop.
func (st *messagesStream) event(data string) (bool, error) {
	var ev messagesEvent
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		return false, err
	}
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			st.model, st.usage = ev.Message.Model, ev.Message.Usage
		}
	case "content_block_start":
		if ev.ContentBlock == nil || ev.Index < 0 || ev.Index > 1000 {
			return false, errors.New("bad content_block_start")
		}
		for len(st.blocks) <= ev.Index {
			st.blocks = append(st.blocks, nil)
			st.partial = append(st.partial, "")
		}
		b := *ev.ContentBlock
		st.blocks[ev.Index] = &b
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= len(st.blocks) || st.blocks[ev.Index] == nil || ev.Delta == nil {
			return false, errors.New("content_block_delta for an unknown block")
		}
		switch ev.Delta.Type {
		case "text_delta":
			st.blocks[ev.Index].Text += ev.Delta.Text
		case "input_json_delta":
			st.partial[ev.Index] += ev.Delta.PartialJSON
		}
	case "message_delta":
		if ev.Usage != nil {
			st.usage.OutputTokens = ev.Usage.OutputTokens
			if ev.Usage.InputTokens > 0 {
				st.usage.InputTokens = ev.Usage.InputTokens
			}
		}
	case "message_stop":
		st.stopped = true
		return true, nil
	case "error":
		if ev.Error != nil {
			return false, streamError(ev.Error.Type, ev.Error.Message)
		}
		return false, streamError("", "error event")
	}
	return false, nil
}

// content is the blocks received, each tool_use block with its input.
func (st *messagesStream) content() ([]messagesBlock, error) {
	var content []messagesBlock
	for i, b := range st.blocks {
		if b == nil {
			continue
		}
		if b.Type == "tool_use" {
			in := st.partial[i]
			if in == "" {
				in = "{}"
			}
			if !json.Valid([]byte(in)) {
				return nil, errors.New("tool_use input is not valid JSON")
			}
			b.Input = json.RawMessage(in)
		}
		content = append(content, *b)
	}
	return content, nil
}

func blocksResult(model string, content []messagesBlock, u messagesUsage) *turnResult {
	tr := &turnResult{model: model, usage: muster.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}}
	var raw []any
	for _, b := range content {
		switch b.Type {
		case "text":
			tr.text += b.Text
			if b.Text != "" {
				raw = append(raw, map[string]any{"type": "text", "text": b.Text})
			}
		case "tool_use":
			in := b.Input
			if len(in) == 0 {
				in = json.RawMessage("{}")
			}
			tr.calls = append(tr.calls, toolCall{id: b.ID, name: b.Name, args: string(in)})
			raw = append(raw, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": in})
		}
	}
	tr.raw = raw
	return tr
}

func (w *messagesWire) addAssistant(tr *turnResult) {
	w.messages = append(w.messages, map[string]any{"role": "assistant", "content": tr.raw})
}

func (w *messagesWire) addResults(rs []toolResult) {
	var content []any
	for _, r := range rs {
		c := map[string]any{"type": "tool_result", "tool_use_id": r.id, "content": r.output}
		if r.isError {
			c["is_error"] = true
		}
		content = append(content, c)
	}
	w.messages = append(w.messages, map[string]any{"role": "user", "content": content})
}

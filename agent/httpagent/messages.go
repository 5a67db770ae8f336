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
	var model string
	var usage messagesUsage
	var blocks []*messagesBlock
	var partial []string
	stopped := false
	err := readSSE(r, func(name, data string) (bool, error) {
		var ev struct {
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
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return false, err
		}
		switch ev.Type {
		case "message_start":
			if ev.Message != nil {
				model, usage = ev.Message.Model, ev.Message.Usage
			}
		case "content_block_start":
			if ev.ContentBlock == nil || ev.Index < 0 || ev.Index > 1000 {
				return false, errors.New("bad content_block_start")
			}
			for len(blocks) <= ev.Index {
				blocks = append(blocks, nil)
				partial = append(partial, "")
			}
			b := *ev.ContentBlock
			blocks[ev.Index] = &b
		case "content_block_delta":
			if ev.Index < 0 || ev.Index >= len(blocks) || blocks[ev.Index] == nil || ev.Delta == nil {
				return false, errors.New("content_block_delta for an unknown block")
			}
			switch ev.Delta.Type {
			case "text_delta":
				blocks[ev.Index].Text += ev.Delta.Text
			case "input_json_delta":
				partial[ev.Index] += ev.Delta.PartialJSON
			}
		case "message_delta":
			if ev.Usage != nil {
				usage.OutputTokens = ev.Usage.OutputTokens
				if ev.Usage.InputTokens > 0 {
					usage.InputTokens = ev.Usage.InputTokens
				}
			}
		case "message_stop":
			stopped = true
			return true, nil
		case "error":
			if ev.Error != nil {
				return false, streamError(ev.Error.Type, ev.Error.Message)
			}
			return false, streamError("", "error event")
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if !stopped {
		return nil, errNoEnd
	}
	var content []messagesBlock
	for i, b := range blocks {
		if b == nil {
			continue
		}
		if b.Type == "tool_use" {
			in := partial[i]
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
	return blocksResult(model, content, usage), nil
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

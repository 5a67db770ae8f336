package mockllm

import (
	"encoding/json"
	"net/http"
)

type anthropicRequest struct {
	Model    string            `json:"model"`
	Messages []json.RawMessage `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
	Stream   bool              `json:"stream"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// parseAnthropic reads a Messages request. A user message with a text
// block is a prompt; a user message with tool_result blocks is one tool
// turn.
func parseAnthropic(body []byte) (*turn, error) {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	t := &turn{model: req.Model, tools: len(req.Tools) > 0, stream: req.Stream}
	for _, raw := range req.Messages {
		var m anthropicMessage
		if json.Unmarshal(raw, &m) != nil || m.Role != "user" {
			continue
		}
		text, results := anthropicContent(m.Content)
		switch {
		case results > 0:
			t.step++
		case text != "":
			t.prompt, t.step = text, 0
		}
	}
	return t, nil
}

func anthropicContent(c json.RawMessage) (text string, results int) {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s, 0
	}
	var blocks []anthropicBlock
	_ = json.Unmarshal(c, &blocks)
	for _, b := range blocks {
		switch b.Type {
		case "text":
			text += b.Text + "\n"
		case "tool_result":
			results++
		}
	}
	return text, results
}

func anthropicUsage(u Usage, output int) map[string]any {
	return map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": output,
		"cache_creation_input_tokens": u.CacheWriteTokens, "cache_read_input_tokens": u.CacheReadTokens,
	}
}

func writeAnthropic(w http.ResponseWriter, t *turn, rp *reply) {
	id := "msg_mock" + rp.id
	stop := "end_turn"
	if len(rp.calls) > 0 {
		stop = "tool_use"
	}
	if !t.stream {
		var content []any
		if rp.text != "" {
			content = append(content, map[string]any{"type": "text", "text": rp.text})
		}
		for _, c := range rp.calls {
			content = append(content, map[string]any{"type": "tool_use", "id": "toolu_" + c.id, "name": c.name, "input": c.input})
		}
		writeJSON(w, 200, map[string]any{"id": id, "type": "message", "role": "assistant", "model": rp.model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": anthropicUsage(rp.usage, rp.usage.OutputTokens)})
		return
	}
	s := newSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": rp.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(rp.usage, 1)}})
	idx := 0
	if rp.text != "" {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "text", "text": ""}})
		s.event("ping", map[string]any{"type": "ping"})
		for i, part := range chunks(rp.text) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "text_delta", "text": part}})
			if rp.brk && i == 0 {
				return
			}
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	for _, c := range rp.calls {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + c.id, "name": c.name, "input": map[string]any{}}})
		for _, part := range chunks(c.args) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			if rp.brk {
				return
			}
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	s.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": anthropicUsage(rp.usage, rp.usage.OutputTokens)})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

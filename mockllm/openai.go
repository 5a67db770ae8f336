package mockllm

import (
	"encoding/json"
	"net/http"
	"time"
)

type responsesRequest struct {
	Model  string            `json:"model"`
	Input  json.RawMessage   `json:"input"`
	Tools  []json.RawMessage `json:"tools"`
	Stream bool              `json:"stream"`
}

type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// textOf returns the text of a content that is a string or a list of
// parts with "text" fields.
func textOf(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(c, &parts)
	out := ""
	for _, p := range parts {
		if p.Text != "" {
			out += p.Text + "\n"
		}
	}
	return out
}

// parseResponses reads a Responses request: a run of function or custom
// tool call outputs is one tool turn.
func parseResponses(body []byte) (*turn, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	t := &turn{model: req.Model, tools: len(req.Tools) > 0, stream: req.Stream}
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		t.prompt = s
		return t, nil
	}
	var items []responsesItem
	if err := json.Unmarshal(req.Input, &items); err != nil && len(req.Input) > 0 {
		return nil, err
	}
	inRun := false
	for _, it := range items {
		switch {
		case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
			if !inRun {
				t.step++
			}
			inRun = true
			continue
		case (it.Type == "" || it.Type == "message") && it.Role == "user":
			if text := textOf(it.Content); text != "" {
				t.prompt, t.step = text, 0
			}
		}
		inRun = false
	}
	return t, nil
}

func writeResponses(w http.ResponseWriter, t *turn, rp *reply) {
	respID := "resp_mock" + rp.id
	usage := map[string]any{
		"input_tokens": rp.usage.InputTokens + rp.usage.CacheReadTokens, "input_tokens_details": map[string]any{"cached_tokens": rp.usage.CacheReadTokens},
		"output_tokens": rp.usage.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": rp.usage.InputTokens + rp.usage.CacheReadTokens + rp.usage.OutputTokens,
	}
	output := responsesOutput(rp)
	resp := func(status string, out []any) map[string]any {
		r := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": status,
			"model": rp.model, "output": out}
		if status == "completed" {
			r["usage"] = usage
		}
		return r
	}
	if !t.stream {
		writeJSON(w, 200, resp("completed", output))
		return
	}
	st := &responsesStream{s: newSSE(w), rp: rp}
	st.ev("response.created", map[string]any{"response": resp("in_progress", []any{})})
	st.ev("response.in_progress", map[string]any{"response": resp("in_progress", []any{})})
	for i, item := range output {
		it := item.(map[string]any)
		if !st.item(i, it) {
			return // a broken stream
		}
		st.ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	st.ev("response.completed", map[string]any{"response": resp("completed", output)})
}

// responsesOutput is a reply's output items: its message, then its calls.
func responsesOutput(rp *reply) []any {
	var output []any
	if rp.text != "" {
		output = append(output, map[string]any{"id": "msg_mock" + rp.id, "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": rp.text, "annotations": []any{}}}})
	}
	for _, c := range rp.calls {
		if c.custom != "" {
			output = append(output, map[string]any{"id": "ctc_" + c.id, "type": "custom_tool_call", "status": "completed",
				"call_id": c.id, "name": c.name, "input": c.custom})
		} else {
			output = append(output, map[string]any{"id": "fc_" + c.id, "type": "function_call", "status": "completed",
				"call_id": c.id, "name": c.name, "arguments": c.args})
		}
	}
	return output
}

// responsesStream writes a streamed Responses reply's events, numbered.
type responsesStream struct {
	s   *sse
	rp  *reply
	seq int
}

func (st *responsesStream) ev(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = st.seq
	st.seq++
	st.s.event(typ, fields)
}

// item streams output item i in pieces; false where the reply breaks
// the stream off.
func (st *responsesStream) item(i int, it map[string]any) bool {
	rp, ev := st.rp, st.ev
	switch it["type"] {
	case "message":
		msgID := "msg_mock" + rp.id
		ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
		ev("response.content_part.added", map[string]any{"item_id": msgID, "output_index": i, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for j, part := range chunks(rp.text) {
			ev("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": i, "content_index": 0, "delta": part})
			if rp.brk && j == 0 {
				return false
			}
		}
		ev("response.output_text.done", map[string]any{"item_id": msgID, "output_index": i, "content_index": 0, "text": rp.text})
		ev("response.content_part.done", map[string]any{"item_id": msgID, "output_index": i, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": rp.text, "annotations": []any{}}})
	case "function_call":
		ev("response.output_item.added", map[string]any{"output_index": i, "item": inProgress(it, "arguments")})
		args := it["arguments"].(string)
		for _, part := range chunks(args) {
			ev("response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": part})
			if rp.brk {
				return false
			}
		}
		ev("response.function_call_arguments.done", map[string]any{"item_id": it["id"], "output_index": i, "arguments": args})
	default:
		ev("response.output_item.added", map[string]any{"output_index": i, "item": inProgress(it, "input")})
		ev("response.custom_tool_call_input.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": it["input"]})
		if rp.brk {
			return false
		}
		ev("response.custom_tool_call_input.done", map[string]any{"item_id": it["id"], "output_index": i, "input": it["input"]})
	}
	return true
}

// inProgress is a copy of a call item as first announced: its content
// key empty, its status in_progress.
func inProgress(it map[string]any, content string) map[string]any {
	added := map[string]any{}
	for k, v := range it {
		added[k] = v
	}
	added[content], added["status"] = "", "in_progress"
	return added
}

type chatRequest struct {
	Model    string            `json:"model"`
	Messages []chatMessage     `json:"messages"`
	Tools    []json.RawMessage `json:"tools"`
	Stream   bool              `json:"stream"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// parseChat reads a Chat Completions request: a run of "tool" messages is
// one tool turn.
func parseChat(body []byte) (*turn, error) {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	t := &turn{model: req.Model, tools: len(req.Tools) > 0, stream: req.Stream}
	inRun := false
	for _, m := range req.Messages {
		switch m.Role {
		case "tool", "function":
			if !inRun {
				t.step++
			}
			inRun = true
			continue
		case "user":
			if text := textOf(m.Content); text != "" {
				t.prompt, t.step = text, 0
			}
		}
		inRun = false
	}
	return t, nil
}

func writeChat(w http.ResponseWriter, t *turn, rp *reply) {
	id := "chatcmpl-mock" + rp.id
	finish := "stop"
	if len(rp.calls) > 0 {
		finish = "tool_calls"
	}
	usage := map[string]any{"prompt_tokens": rp.usage.InputTokens + rp.usage.CacheReadTokens, "completion_tokens": rp.usage.OutputTokens,
		"total_tokens":          rp.usage.InputTokens + rp.usage.CacheReadTokens + rp.usage.OutputTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": rp.usage.CacheReadTokens}}
	var toolCalls []any
	for i, c := range rp.calls {
		toolCalls = append(toolCalls, map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": c.args}})
	}
	created := time.Now().Unix()
	if !t.stream {
		msg := map[string]any{"role": "assistant", "content": rp.text}
		if len(toolCalls) > 0 {
			msg["tool_calls"] = toolCalls
		}
		writeJSON(w, 200, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": rp.model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": rp.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		s.event("", c)
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for i, part := range chunks(rp.text) {
		chunk(map[string]any{"content": part}, nil, nil)
		if rp.brk && i == 0 {
			return
		}
	}
	for i, c := range rp.calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.id, "type": "function",
			"function": map[string]any{"name": c.name, "arguments": ""}}}}, nil, nil)
		for _, part := range chunks(c.args) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": part}}}}, nil, nil)
			if rp.brk {
				return
			}
		}
	}
	chunk(map[string]any{}, finish, usage)
	s.raw("data: [DONE]")
}

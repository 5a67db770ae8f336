package httpagent

import (
	"encoding/json"
	"io"
	"strings"

	muster "github.com/muster-run/muster"
)

// responsesWire is the OpenAI Responses API, stateless (store: false):
// each request carries the whole input list.
type responsesWire struct {
	model     string
	system    string
	maxTokens int
	input     []any
	tools     []any
}

func newResponses(model, system, prompt string, tools []toolSpec, maxTokens int) *responsesWire {
	w := &responsesWire{model: model, system: system, maxTokens: maxTokens}
	w.input = append(w.input, map[string]any{"type": "message", "role": "user",
		"content": []any{map[string]any{"type": "input_text", "text": prompt}}})
	for _, t := range tools {
		w.tools = append(w.tools, map[string]any{"type": "function", "name": t.name, "description": t.description, "parameters": t.params})
	}
	return w
}

func (w *responsesWire) request(stream bool) any {
	return map[string]any{"model": w.model, "instructions": w.system, "input": w.input, "tools": w.tools,
		"max_output_tokens": w.maxTokens, "store": false, "stream": stream}
}

type responsesItem struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
}

type responsesObject struct {
	Model  string          `json:"model"`
	Status string          `json:"status"`
	Output []responsesItem `json:"output"`
	Usage  *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (o *responsesObject) result() (*turnResult, error) {
	if o.Error != nil && o.Error.Message != "" {
		return nil, streamError(o.Error.Code, o.Error.Message)
	}
	tr := &turnResult{model: o.Model}
	if o.Usage != nil {
		c := o.Usage.InputTokensDetails.CachedTokens
		tr.usage = muster.Usage{InputTokens: o.Usage.InputTokens - c, CacheReadTokens: c, OutputTokens: o.Usage.OutputTokens}
	}
	var raw []any
	for _, it := range o.Output {
		switch it.Type {
		case "message":
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			_ = json.Unmarshal(it.Content, &parts)
			var content []any
			for _, p := range parts {
				if p.Type == "output_text" {
					tr.text += p.Text
					content = append(content, map[string]any{"type": "output_text", "text": p.Text})
				}
			}
			raw = append(raw, map[string]any{"type": "message", "role": "assistant", "content": content})
		case "function_call":
			tr.calls = append(tr.calls, toolCall{id: it.CallID, name: it.Name, args: it.Arguments})
			raw = append(raw, map[string]any{"type": "function_call", "call_id": it.CallID, "name": it.Name, "arguments": it.Arguments})
		case "custom_tool_call":
			args, _ := json.Marshal(map[string]string{"input": it.Input})
			tr.calls = append(tr.calls, toolCall{id: it.CallID, name: it.Name, args: string(args)})
			raw = append(raw, map[string]any{"type": "function_call", "call_id": it.CallID, "name": it.Name, "arguments": string(args)})
		}
	}
	tr.raw = raw
	return tr, nil
}

func (w *responsesWire) parse(r io.Reader, stream bool) (*turnResult, error) {
	if !stream {
		var o responsesObject
		if err := json.NewDecoder(r).Decode(&o); err != nil {
			return nil, err
		}
		return o.result()
	}
	var done []responsesItem
	var final *responsesObject
	err := readSSE(r, func(name, data string) (bool, error) {
		var ev struct {
			Type     string           `json:"type"`
			Item     *responsesItem   `json:"item"`
			Response *responsesObject `json:"response"`
			Code     string           `json:"code"`
			Message  string           `json:"message"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return false, err
		}
		if ev.Type == "" {
			ev.Type = name
		}
		switch ev.Type {
		case "response.output_item.done":
			if ev.Item != nil {
				done = append(done, *ev.Item)
			}
		case "response.completed", "response.incomplete":
			final = ev.Response
			return true, nil
		case "response.failed":
			if ev.Response != nil && ev.Response.Error != nil {
				return false, streamError(ev.Response.Error.Code, ev.Response.Error.Message)
			}
			return false, streamError("", "response failed")
		case "error":
			return false, streamError(ev.Code, ev.Message)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	if final == nil {
		return nil, errNoEnd
	}
	if len(final.Output) == 0 {
		final.Output = done
	}
	return final.result()
}

func (w *responsesWire) addAssistant(tr *turnResult) {
	if raw, ok := tr.raw.([]any); ok {
		w.input = append(w.input, raw...)
		return
	}
	if strings.TrimSpace(tr.text) != "" {
		w.input = append(w.input, map[string]any{"type": "message", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": tr.text}}})
	}
	for _, c := range tr.calls {
		w.input = append(w.input, map[string]any{"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.args})
	}
}

func (w *responsesWire) addResults(rs []toolResult) {
	for _, r := range rs {
		w.input = append(w.input, map[string]any{"type": "function_call_output", "call_id": r.id, "output": r.output})
	}
}

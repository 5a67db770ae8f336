package mockllm

import (
	"encoding/json"
	"net/http"
)

type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string          `json:"text"`
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
	} `json:"tools"`
}

// parseGemini reads a generateContent request: a user turn carrying
// functionResponse parts is one tool turn.
func parseGemini(body []byte) (*turn, error) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	t := &turn{}
	for _, tl := range req.Tools {
		if len(tl.FunctionDeclarations) > 0 {
			t.tools = true
		}
	}
	for _, c := range req.Contents {
		if c.Role == "model" {
			continue
		}
		text, results := "", 0
		for _, p := range c.Parts {
			if len(p.FunctionResponse) > 0 {
				results++
			}
			if p.Text != "" {
				text += p.Text + "\n"
			}
		}
		switch {
		case results > 0:
			t.step++
		case text != "":
			t.prompt, t.step = text, 0
		}
	}
	return t, nil
}

func writeGemini(w http.ResponseWriter, t *turn, rp *reply) {
	usage := map[string]any{"promptTokenCount": rp.usage.InputTokens + rp.usage.CacheReadTokens,
		"candidatesTokenCount": rp.usage.OutputTokens, "cachedContentTokenCount": rp.usage.CacheReadTokens,
		"totalTokenCount": rp.usage.InputTokens + rp.usage.CacheReadTokens + rp.usage.OutputTokens}
	var calls []any
	for _, c := range rp.calls {
		calls = append(calls, map[string]any{"functionCall": map[string]any{"name": c.name, "args": c.input}})
	}
	cand := func(parts []any, finish string) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			c["finishReason"] = finish
		}
		return c
	}
	if !t.stream {
		parts := []any{}
		if rp.text != "" {
			parts = append(parts, map[string]any{"text": rp.text})
		}
		parts = append(parts, calls...)
		writeJSON(w, 200, map[string]any{"candidates": []any{cand(parts, "STOP")}, "usageMetadata": usage, "modelVersion": rp.model})
		return
	}
	s := newSSE(w)
	texts := chunks(rp.text)
	for i, part := range texts {
		if rp.brk && i == 1 {
			return
		}
		last := i == len(texts)-1 && len(calls) == 0
		ev := map[string]any{"candidates": []any{cand([]any{map[string]any{"text": part}}, map[bool]string{true: "STOP"}[last])}, "modelVersion": rp.model}
		if last {
			ev["usageMetadata"] = usage
		}
		s.event("", ev)
	}
	if len(calls) > 0 {
		if rp.brk {
			return
		}
		s.event("", map[string]any{"candidates": []any{cand(calls, "STOP")}, "usageMetadata": usage, "modelVersion": rp.model})
	}
	if len(texts) == 0 && len(calls) == 0 {
		s.event("", map[string]any{"candidates": []any{cand([]any{map[string]any{"text": ""}}, "STOP")}, "usageMetadata": usage, "modelVersion": rp.model})
	}
}

package mockllm_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster/mockllm"
	"github.com/muster-run/muster/mockllm/mockllmtest"
)

const scriptYAML = `
scenarios:
  - name: write
    steps:
      - text: "I will write it."
        tools:
          - name: Write
            input: {file_path: "{{cwd}}/hello.txt", content: "hello\n"}
      - text: "Wrote hello.txt."
        usage: {input_tokens: 100, output_tokens: 7, cache_read_tokens: 3}
  - name: flaky
    steps:
      - {status: 429, retry_after: "2", times: 1}
      - text: "after the rate limit"
  - name: auth
    steps:
      - {status: 401, error: "bad key"}
  - name: broken
    steps:
      - {text: "this stream breaks off somewhere in the middle", break: true}
`

func start(t *testing.T) *mockllm.Server {
	t.Helper()
	s, err := mockllm.ParseScript("script.yaml", []byte(scriptYAML))
	if err != nil {
		t.Fatal(err)
	}
	return mockllmtest.Start(t, s)
}

type event struct {
	name string
	data map[string]any
}

func post(t *testing.T, url, body string) (*http.Response, []event, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return resp, nil, string(b)
	}
	var evs []event
	var name string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			d := strings.TrimPrefix(line, "data: ")
			var m map[string]any
			if d != "[DONE]" {
				if err := json.Unmarshal([]byte(d), &m); err != nil {
					t.Fatalf("bad data %q: %v", d, err)
				}
			}
			evs = append(evs, event{name, m})
			name = ""
		}
	}
	return resp, evs, ""
}

func names(evs []event) string {
	var out []string
	for _, e := range evs {
		if len(out) > 0 && out[len(out)-1] == e.name {
			continue // collapse repeated deltas
		}
		out = append(out, e.name)
	}
	return strings.Join(out, ",")
}

func TestAnthropicToolTurnThenText(t *testing.T) {
	t.Parallel()
	s := start(t)
	first := `{"model":"claude-x","stream":true,"tools":[{"name":"Write"}],"system":[{"type":"text","text":"Primary working directory: /tmp/w"}],
	  "messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"go [scenario: write]"}]}]}`
	_, evs, _ := post(t, s.URL+"/v1/messages?beta=true", first)
	want := "message_start,content_block_start,ping,content_block_delta,content_block_stop,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
	if got := names(evs); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	var args string
	for _, e := range evs {
		if d, ok := e.data["delta"].(map[string]any); ok && d["type"] == "input_json_delta" {
			args += d["partial_json"].(string)
		}
	}
	var in map[string]string
	if err := json.Unmarshal([]byte(args), &in); err != nil || in["file_path"] != "/tmp/w/hello.txt" {
		t.Fatalf("tool input %q: %v", args, err)
	}
	if sr := evs[len(evs)-2].data["delta"].(map[string]any)["stop_reason"]; sr != "tool_use" {
		t.Fatalf("stop_reason %v", sr)
	}
	second := `{"model":"claude-x","tools":[{"name":"Write"}],"messages":[{"role":"user","content":"go [scenario: write]"},
	  {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Write","input":{}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
	_, _, body := post(t, s.URL+"/v1/messages", second)
	var msg struct {
		Content []struct{ Text string }
		Usage   map[string]int
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err, body)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "Wrote hello.txt." || msg.Usage["input_tokens"] != 100 || msg.Usage["cache_read_input_tokens"] != 3 {
		t.Fatalf("reply %s", body)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Scenario != "write" || reqs[0].Step != 0 || reqs[1].Step != 1 {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestResponsesStream(t *testing.T) {
	t.Parallel()
	s := start(t)
	body := `{"model":"gpt-5.5","stream":true,"tools":[{"type":"function","name":"Write"}],"input":[
	  {"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context><cwd>/w</cwd></environment_context>"}]},
	  {"type":"message","role":"user","content":[{"type":"input_text","text":"[scenario: write]"}]}]}`
	_, evs, _ := post(t, s.URL+"/v1/responses", body)
	got := names(evs)
	for _, want := range []string{"response.created", "response.output_text.delta", "response.function_call_arguments.done", "response.output_item.done", "response.completed"} {
		if !strings.Contains(got, want) {
			t.Fatalf("missing %s in %s", want, got)
		}
	}
	last := evs[len(evs)-1].data["response"].(map[string]any)
	out := last["output"].([]any)
	fc := out[1].(map[string]any)
	if fc["type"] != "function_call" || !strings.Contains(fc["arguments"].(string), `/w/hello.txt`) {
		t.Fatalf("function call %v", fc)
	}
}

func TestChatAndGemini(t *testing.T) {
	t.Parallel()
	s := start(t)
	_, evs, _ := post(t, s.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"[scenario: write]"},
	  {"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"Write","arguments":"{}"}}]},
	  {"role":"tool","tool_call_id":"c","content":"ok"}],"tools":[{"type":"function"}]}`)
	if evs[len(evs)-1].data != nil || evs[len(evs)-2].data["usage"] == nil {
		t.Fatalf("chat stream end: %v", evs[len(evs)-2:])
	}
	_, evs, _ = post(t, s.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		`{"contents":[{"role":"user","parts":[{"text":"[scenario: write]"}]}],"tools":[{"functionDeclarations":[{"name":"Write"}]}]}`)
	lastEv := evs[len(evs)-1].data
	if lastEv["usageMetadata"] == nil || !strings.Contains(mustJSON(lastEv), `"functionCall"`) {
		t.Fatalf("gemini last event %v", lastEv)
	}
}

func TestErrorsAndTimes(t *testing.T) {
	t.Parallel()
	s := start(t)
	// A side request without tools neither gets nor uses up the error.
	resp, _, body := post(t, s.URL+"/v1/messages", `{"messages":[{"role":"user","content":"[scenario: flaky]"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("side request: %d %s", resp.StatusCode, body)
	}
	flaky := `{"tools":[{"name":"Write"}],"messages":[{"role":"user","content":"[scenario: flaky]"}]}`
	resp, _, body = post(t, s.URL+"/v1/messages", flaky)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(body, "rate_limit_error") {
		t.Fatalf("first: %d %s", resp.StatusCode, body)
	}
	resp, _, body = post(t, s.URL+"/v1/messages", flaky)
	if resp.StatusCode != 200 || !strings.Contains(body, "after the rate limit") {
		t.Fatalf("second: %d %s", resp.StatusCode, body)
	}
	resp, _, body = post(t, s.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"[scenario: auth]"}]}`)
	if resp.StatusCode != 401 || !strings.Contains(body, "bad key") {
		t.Fatalf("auth: %d %s", resp.StatusCode, body)
	}
	_, evs, _ := post(t, s.URL+"/v1/messages", `{"stream":true,"messages":[{"role":"user","content":"[scenario: broken]"}]}`)
	if names(evs) == "" || strings.Contains(names(evs), "message_stop") {
		t.Fatalf("broken stream: %s", names(evs))
	}
}

func TestNoToolsNoToolCall(t *testing.T) {
	t.Parallel()
	s := start(t)
	_, _, body := post(t, s.URL+"/v1/messages", `{"messages":[{"role":"user","content":"title for [scenario: write]"}]}`)
	if strings.Contains(body, "tool_use") {
		t.Fatalf("tool call without tools: %s", body)
	}
}

func TestParseScriptErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "s.json")
	if err := os.WriteFile(p, []byte("{\"scenarios\": [\n{\"name\": \"a\", \"stepz\": []}]}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mockllm.LoadScript(p); err == nil || !strings.Contains(err.Error(), "s.json:2") {
		t.Fatalf("want a positioned error, got %v", err)
	}
	if _, err := mockllm.ParseScript("x.yaml", []byte("scenarios:\n  - name: a\n    stepz: []\n")); err == nil || !strings.Contains(err.Error(), "x.yaml") {
		t.Fatalf("yaml unknown key: %v", err)
	}
	if _, err := mockllm.Listen("0.0.0.0:0", nil, nil); err == nil {
		t.Fatal("non-loopback address accepted")
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestExampleScriptLoads(t *testing.T) {
	t.Parallel()
	s, err := mockllm.LoadScript("testdata/agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Scenarios) < 10 {
		t.Fatalf("%d scenarios", len(s.Scenarios))
	}
	srv := mockllmtest.Start(t, s)
	_, _, body := post(t, srv.URL+"/v1/responses", `{"model":"gpt-5.5","tools":[{"type":"custom","name":"apply_patch"}],
	  "input":[{"role":"user","content":"[scenario: codex-patch]"}]}`)
	if !strings.Contains(body, `"custom_tool_call"`) || !strings.Contains(body, "*** Add File: patched.txt") {
		t.Fatalf("apply_patch reply %s", body)
	}
}

func BenchmarkAnthropicStream(b *testing.B) {
	s, err := mockllm.LoadScript("testdata/agents.yaml")
	if err != nil {
		b.Fatal(err)
	}
	srv := mockllmtest.Start(b, s)
	body := `{"model":"m","stream":true,"tools":[{"name":"Write"}],"messages":[{"role":"user","content":"[scenario: claude-write] Primary working directory: /w"}]}`
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

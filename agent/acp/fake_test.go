package acp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary is also a fake ACP agent: with FAKEACP_MODE set,
// TestMain runs fakeAgent instead of the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("FAKEACP_MODE"); mode != "" {
		os.Exit(fakeAgent(mode))
	}
	os.Exit(m.Run())
}

type fake struct {
	in   *bufio.Scanner
	out  *bufio.Writer
	next int
	sid  string
	cwd  string
	// queued are messages read while waiting for a response.
	queued []map[string]any
}

func (f *fake) send(m map[string]any) {
	m["jsonrpc"] = "2.0"
	b, _ := json.Marshal(m)
	f.out.Write(b)
	f.out.WriteByte('\n')
	f.out.Flush()
}

func (f *fake) read() map[string]any {
	if len(f.queued) > 0 {
		m := f.queued[0]
		f.queued = f.queued[1:]
		return m
	}
	if !f.in.Scan() {
		os.Exit(0)
	}
	var m map[string]any
	if err := json.Unmarshal(f.in.Bytes(), &m); err != nil {
		fmt.Fprintln(os.Stderr, "fake: bad line", err)
		os.Exit(9)
	}
	return m
}

// call sends a request to the client and waits for its response, queueing
// anything else.
func (f *fake) call(method string, params map[string]any) map[string]any {
	f.next++
	id := float64(1000 + f.next)
	f.send(map[string]any{"id": id, "method": method, "params": params})
	for {
		if !f.in.Scan() {
			os.Exit(0)
		}
		var m map[string]any
		_ = json.Unmarshal(f.in.Bytes(), &m)
		if m["id"] == id && m["method"] == nil {
			return m
		}
		f.queued = append(f.queued, m)
	}
}

func (f *fake) update(u map[string]any) {
	f.send(map[string]any{"method": "session/update", "params": map[string]any{"sessionId": f.sid, "update": u}})
}

func (f *fake) say(text string) {
	f.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}})
}

func (f *fake) reply(m map[string]any, result any) {
	f.send(map[string]any{"id": m["id"], "result": result})
}

func (f *fake) fail(m map[string]any, code int, msg string) {
	f.send(map[string]any{"id": m["id"], "error": map[string]any{"code": code, "message": msg}})
}

// allowed asks permission for a tool call and reports whether an allow
// option was chosen.
func (f *fake) allowed(kind, title string, input map[string]any, path string) bool {
	tc := map[string]any{"toolCallId": title, "title": title, "kind": kind, "rawInput": input}
	if path != "" {
		tc["locations"] = []any{map[string]any{"path": path}}
	}
	r := f.call("session/request_permission", map[string]any{"sessionId": f.sid, "toolCall": tc, "options": []any{
		map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
		map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"},
	}})
	res, _ := r["result"].(map[string]any)
	out, _ := res["outcome"].(map[string]any)
	return out["outcome"] == "selected" && out["optionId"] == "yes"
}

func fakeAgent(mode string) int {
	f := &fake{in: bufio.NewScanner(os.Stdin), out: bufio.NewWriter(os.Stdout)}
	f.in.Buffer(make([]byte, 1<<20), 8<<20)
	if mode == "exit-early" {
		fmt.Fprintln(os.Stderr, "Error: invalid x-api-key")
		return 1
	}
	if mode == "exit-silent" {
		return 0
	}
	for {
		m := f.read()
		method, _ := m["method"].(string)
		params, _ := m["params"].(map[string]any)
		switch method {
		case "initialize":
			caps, _ := params["clientCapabilities"].(map[string]any)
			b, _ := json.Marshal(caps)
			os.WriteFile(os.Getenv("FAKEACP_LOG")+".caps", b, 0o644)
			f.reply(m, map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{"loadSession": true},
				"agentInfo": map[string]any{"name": "fake-acp", "version": "1.2.3"}})
		case "session/new":
			f.cwd, _ = params["cwd"].(string)
			f.sid = "sess-1"
			if mode == "auth" {
				f.fail(m, -32000, "Authentication required")
				continue
			}
			f.reply(m, map[string]any{"sessionId": f.sid, "models": map[string]any{"currentModelId": "fast",
				"availableModels": []any{map[string]any{"modelId": "fast"}, map[string]any{"modelId": "smart"}}}})
		case "session/load":
			f.cwd, _ = params["cwd"].(string)
			f.sid, _ = params["sessionId"].(string)
			f.say("replayed history")
			f.update(map[string]any{"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": map[string]any{"amount": 0.5, "currency": "USD"}})
			f.reply(m, map[string]any{})
		case "session/set_model":
			os.WriteFile(os.Getenv("FAKEACP_LOG")+".model", []byte(params["modelId"].(string)), 0o644)
			f.reply(m, map[string]any{})
		case "session/prompt":
			prompt(f, m, mode, params)
		case "session/cancel":
		default:
			if m["id"] != nil && method != "" {
				f.fail(m, -32601, "unknown "+method)
			}
		}
	}
}

func prompt(f *fake, m map[string]any, mode string, params map[string]any) {
	blocks, _ := params["prompt"].([]any)
	text := ""
	if len(blocks) > 0 {
		b, _ := blocks[0].(map[string]any)
		text, _ = b["text"].(string)
	}
	os.WriteFile(os.Getenv("FAKEACP_LOG")+".prompt", []byte(text), 0o644)
	hello := filepath.Join(f.cwd, "hello.txt")
	switch mode {
	case "write":
		f.say("Writing ")
		f.say("the file. key=" + os.Getenv("FAKEACP_KEY"))
		f.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Write hello.txt", "kind": "edit", "status": "pending"})
		f.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "rawInput": map[string]any{"file_path": hello}})
		if f.allowed("edit", "Write hello.txt", map[string]any{"file_path": hello}, hello) {
			r := f.call("fs/write_text_file", map[string]any{"sessionId": f.sid, "path": hello, "content": "hello\n"})
			if r["error"] != nil {
				f.say(fmt.Sprint(" write failed: ", r["error"]))
			}
		}
		f.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
		f.update(map[string]any{"sessionUpdate": "plan", "entries": []any{map[string]any{"content": "write hello", "status": "completed"}}})
		f.update(map[string]any{"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": map[string]any{"amount": 0.75, "currency": "USD"}})
		f.say("Done.")
		f.reply(m, map[string]any{"stopReason": "end_turn", "usage": map[string]any{"inputTokens": 1000, "outputTokens": 70, "cachedReadTokens": 5, "totalTokens": 1075}})
	case "sneak":
		// Writes it must not: through the client and by asking.
		r := f.call("fs/read_text_file", map[string]any{"sessionId": f.sid, "path": "/etc/passwd"})
		f.say(fmt.Sprintf("read outside: %v;", r["error"] != nil))
		r = f.call("fs/write_text_file", map[string]any{"sessionId": f.sid, "path": filepath.Join(f.cwd, "..", "escaped.txt"), "content": "x"})
		f.say(fmt.Sprintf(" write outside: %v;", r["error"] != nil))
		r = f.call("fs/write_text_file", map[string]any{"sessionId": f.sid, "path": filepath.Join(f.cwd, ".git", "hooks", "pre-commit"), "content": "x"})
		f.say(fmt.Sprintf(" write .git: %v;", r["error"] != nil))
		r = f.call("fs/write_text_file", map[string]any{"sessionId": f.sid, "path": filepath.Join(f.cwd, "link", "x.txt"), "content": "x"})
		f.say(fmt.Sprintf(" write via link: %v;", r["error"] != nil))
		r = f.call("fs/write_text_file", map[string]any{"sessionId": f.sid, "path": hello, "content": "hello\n"})
		f.say(fmt.Sprintf(" write hello: %v;", r["error"] != nil))
		r = f.call("terminal/create", map[string]any{"sessionId": f.sid, "command": "sh", "args": []any{"-c", "echo hi > term.txt"}})
		f.say(fmt.Sprintf(" terminal: %v;", r["error"] != nil))
		f.say(fmt.Sprintf(" edit allowed: %v;", f.allowed("edit", "Edit hello.txt", map[string]any{"file_path": hello}, hello)))
		f.say(fmt.Sprintf(" edit outside allowed: %v;", f.allowed("edit", "Edit /etc/x", map[string]any{"file_path": "/etc/x"}, "/etc/x")))
		f.say(fmt.Sprintf(" gate allowed: %v;", f.allowed("execute", "go test ./...", map[string]any{"command": "go test ./..."}, "")))
		f.say(fmt.Sprintf(" rm allowed: %v;", f.allowed("execute", "rm -rf /", map[string]any{"command": "rm -rf /"}, "")))
		f.say(fmt.Sprintf(" read allowed: %v.", f.allowed("read", "Read hello.txt", map[string]any{"file_path": hello}, hello)))
		f.reply(m, map[string]any{"stopReason": "end_turn"})
	case "shell":
		r := f.call("terminal/create", map[string]any{"sessionId": f.sid, "command": "sh", "args": []any{"-c", "printf 'hello\\n' > hello.txt; echo out"}, "cwd": f.cwd})
		res, _ := r["result"].(map[string]any)
		id, _ := res["terminalId"].(string)
		w := f.call("terminal/wait_for_exit", map[string]any{"sessionId": f.sid, "terminalId": id})
		o := f.call("terminal/output", map[string]any{"sessionId": f.sid, "terminalId": id})
		out, _ := o["result"].(map[string]any)
		f.say(fmt.Sprintf("exit %v output %q", w["result"], out["output"]))
		f.call("terminal/release", map[string]any{"sessionId": f.sid, "terminalId": id})
		f.reply(m, map[string]any{"stopReason": "end_turn"})
	case "review":
		f.say("Looks fine.\n```muster-findings\n{\"findings\": [{\"severity\": \"major\", \"title\": \"missing test\", \"path\": \"hello.txt\", \"line\": 1}]}\n```")
		f.reply(m, map[string]any{"stopReason": "end_turn"})
	case "ratelimit":
		f.fail(m, -32603, "API Error: 429 rate_limit_error: Rate limit exceeded, retry after 7 seconds")
	case "hang", "hang-deaf":
		// Answers nothing until cancelled; hang-deaf ignores the cancel.
		for {
			c := f.read()
			if c["method"] == "session/cancel" && mode == "hang" {
				f.reply(m, map[string]any{"stopReason": "cancelled"})
				time.Sleep(50 * time.Millisecond)
				return
			}
		}
	case "flood":
		for i := 0; i < maxUpdatesTest+10; i++ {
			f.say("x")
		}
		f.reply(m, map[string]any{"stopReason": "end_turn"})
	case "exit-mid":
		fmt.Fprintln(os.Stderr, "panic: something broke")
		os.Exit(2)
	default:
		f.say(strings.ToUpper(mode))
		f.reply(m, map[string]any{"stopReason": "end_turn"})
	}
}

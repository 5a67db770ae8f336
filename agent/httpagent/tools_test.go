package httpagent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	muster "github.com/muster-run/muster"
)

func newTB(t *testing.T, auth muster.Authority) (*toolbox, string) {
	t.Helper()
	root := t.TempDir()
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("outside"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\nthree two\n"), 0o644))
	must(t, os.MkdirAll(filepath.Join(root, ".git"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, ".git", "config"), []byte("[core]"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(root, "out")))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")))
	must(t, os.Symlink("a.txt", filepath.Join(root, "inside-link.txt")))
	tb, err := newToolbox(root, auth, time.Minute)
	must(t, err)
	return tb, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestPathConfinement(t *testing.T) {
	t.Parallel()
	tb, outside := newTB(t, muster.AuthorityWrite)
	ctx := context.Background()
	bad := []struct{ tool, args string }{
		{"read_file", `{"path":"../x"}`},
		{"read_file", `{"path":"a/../../x"}`},
		{"read_file", `{"path":"/etc/passwd"}`},
		{"read_file", `{"path":"out/secret.txt"}`},
		{"read_file", `{"path":"link.txt"}`},
		{"read_file", `{"path":".git/config"}`},
		{"write_file", `{"path":"out/new.txt","content":"x"}`},
		{"write_file", `{"path":"link.txt","content":"x"}`},
		{"write_file", `{"path":"../escape.txt","content":"x"}`},
		{"edit_file", `{"path":"link.txt","old_string":"outside","new_string":"pwned"}`},
		{"list_files", `{"path":"out"}`},
		{"search", `{"pattern":"outside","path":"out"}`},
		{"read_file", `not json`},
	}
	for _, c := range bad {
		out, isErr := tb.run(ctx, c.tool, c.args)
		if !isErr || !strings.HasPrefix(out, "error:") {
			t.Errorf("%s %s: allowed: %q", c.tool, c.args, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "outside" {
		t.Fatalf("outside file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("a file was written outside")
	}
	if out, isErr := tb.run(ctx, "read_file", `{"path":"inside-link.txt"}`); isErr || !strings.Contains(out, "one") {
		t.Errorf("symlink inside the worktree refused: %q", out)
	}
}

func TestToolsWork(t *testing.T) {
	t.Parallel()
	tb, _ := newTB(t, muster.AuthorityWrite)
	ctx := context.Background()
	check := func(tool, args, want string, wantErr bool) {
		t.Helper()
		out, isErr := tb.run(ctx, tool, args)
		if isErr != wantErr || !strings.Contains(out, want) {
			t.Errorf("%s %s = %q (error %v), want %q", tool, args, out, isErr, want)
		}
	}
	check("edit_file", `{"path":"a.txt","old_string":"two","new_string":"2"}`, "occurs 2 times", true)
	check("edit_file", `{"path":"a.txt","old_string":"zzz","new_string":"2"}`, "not found", true)
	check("edit_file", `{"path":"a.txt","old_string":"three two","new_string":"three 2"}`, "edited a.txt", false)
	check("read_file", `{"path":"a.txt","start_line":3,"end_line":3}`, "three 2", false)
	check("search", `{"pattern":"t[wh]","regex":true}`, "a.txt:2: two", false)
	check("search", `{"pattern":"[core]"}`, "no matches", false)
	check("write_file", `{"path":"d/e/f.txt","content":"deep"}`, "wrote 4 bytes to d/e/f.txt", false)
	check("list_files", `{}`, "d/e/f.txt", false)
	check("run_command", `{"command":"true"}`, "no shell authority", true)
	check("nope", `{}`, "unknown tool", true)
	big := strings.Repeat("x", 3*MaxToolOutput)
	must(t, os.WriteFile(filepath.Join(tb.root, "big.txt"), []byte(big), 0o644))
	out, _ := tb.run(ctx, "read_file", `{"path":"big.txt"}`)
	if len(out) > MaxToolOutput+200 || !strings.Contains(out, "file cut") {
		t.Errorf("big read not bounded: %d bytes", len(out))
	}
}

func TestToolSpecsByAuthority(t *testing.T) {
	t.Parallel()
	names := func(a muster.Authority) string {
		tb, _ := newTB(t, a)
		var n []string
		for _, s := range tb.specs() {
			n = append(n, s.name)
		}
		return strings.Join(n, ",")
	}
	if got := names(muster.AuthorityRead); got != "list_files,read_file,search" {
		t.Errorf("read: %s", got)
	}
	if got := names(muster.AuthorityWrite); got != "list_files,read_file,search,write_file,edit_file" {
		t.Errorf("write: %s", got)
	}
	if got := names(muster.AuthorityShell); !strings.HasSuffix(got, ",run_command") {
		t.Errorf("shell: %s", got)
	}
	tb, _ := newTB(t, muster.AuthorityRead)
	if out, isErr := tb.run(context.Background(), "write_file", `{"path":"x","content":"y"}`); !isErr {
		t.Errorf("write allowed with read authority: %q", out)
	}
}

func TestShellCommandBounded(t *testing.T) {
	t.Parallel()
	tb, _ := newTB(t, muster.AuthorityShell)
	out, isErr := tb.run(context.Background(), "run_command", `{"command":"yes | head -c 100000; exit 3"}`)
	if isErr || !strings.HasPrefix(out, "exit status 3") || len(out) > MaxToolOutput+200 {
		t.Errorf("run_command: error %v, %d bytes, %q", isErr, len(out), out[:40])
	}
}

func TestChatStreamCallsWithoutIndex(t *testing.T) {
	t.Parallel()
	stream := `data: {"model":"m","choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"list_files","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":2}}

data: [DONE]

`
	w := newChat("m", "s", "p", nil, 0)
	tr, err := w.parse(strings.NewReader(stream), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.calls) != 2 || tr.calls[0].name != "read_file" || tr.calls[1].name != "list_files" || tr.calls[0].args != `{"path":"x"}` {
		t.Fatalf("calls %+v", tr.calls)
	}
	if tr.usage.InputTokens != 10 || tr.usage.OutputTokens != 2 {
		t.Fatalf("usage %+v", tr.usage)
	}
}

func FuzzParseStreams(f *testing.F) {
	f.Add("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	f.Add("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\"}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\"}}\n\n")
	f.Add("event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[]}}\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range []wire{newChat("m", "", "", nil, 0), newResponses("m", "", "", nil, 0), newMessages("m", "", "", nil, 0)} {
			for _, stream := range []bool{true, false} {
				_, _ = w.parse(strings.NewReader(s), stream)
			}
		}
	})
}

// The race resolve alone leaves: a path checked while it led inside, then
// swapped for a link out of the worktree before the write. The write
// goes through an os.Root on the worktree and fails; nothing outside
// changes. And a FIFO planted where a tool reads or writes never blocks
// muster, which runs the tools itself.
func TestFileToolsSurviveASwapAndAFIFO(t *testing.T) {
	t.Parallel()
	tb, outside := newTB(t, muster.AuthorityWrite)
	must(t, os.MkdirAll(filepath.Join(tb.root, "sub"), 0o755))
	checked, err := tb.resolve("sub/secret.txt")
	must(t, err)
	// The swap: sub becomes a link to outside after the check.
	must(t, os.RemoveAll(filepath.Join(tb.root, "sub")))
	must(t, os.Symlink(outside, filepath.Join(tb.root, "sub")))
	if err := tb.writeRel(checked, []byte("pwned"), 0o644); err == nil {
		t.Error("a write through a link swapped in after the check succeeded")
	}
	if _, _, err := tb.readFile(checked); err == nil {
		t.Error("a read through a link swapped in after the check succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "outside" {
		t.Fatalf("outside file changed: %q", b)
	}
	must(t, syscall.Mkfifo(filepath.Join(tb.root, "fifo"), 0o644))
	ctx := context.Background()
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path":"fifo"}`},
		{"write_file", `{"path":"fifo","content":"x"}`},
		{"edit_file", `{"path":"fifo","old_string":"a","new_string":"b"}`},
	} {
		if out, isErr := tb.run(ctx, c.tool, c.args); !isErr {
			t.Errorf("%s on a FIFO: %q", c.tool, out)
		}
	}
	if out, _ := tb.run(ctx, "search", `{"pattern":"one"}`); !strings.Contains(out, "a.txt:1") {
		t.Errorf("search: %q", out)
	}
}

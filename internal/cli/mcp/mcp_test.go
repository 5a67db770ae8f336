package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/muster-run/muster/internal/cli"
	"github.com/muster-run/muster/internal/cli/cmdutil"
)

// The test binary is muster when this variable is set: the MCP server
// runs as `muster mcp`, and the runs it starts as `muster run`.
const beMuster = "MUSTER_MCP_TEST_BE_MUSTER"

func TestMain(m *testing.M) {
	if os.Getenv(beMuster) == "1" {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

const toml = `[executors.planner]
kind = "command"
command = ["./planner.sh"]
roles = ["planner"]

[executors.bad]
kind = "command"
command = ["sh", "-c", "printf '## [ ] a: A\\nAfter: zz\\n' > \"$MUSTER_PLAN_OUT\""]
roles = ["planner"]

[executors.coder]
kind = "command"
command = ["./coder.sh"]
clones = 2
`

// planner.sh writes a valid plan of two tasks.
const plannerSh = `#!/bin/sh
cat > "$MUSTER_PLAN_OUT" <<'EOF'
# Plan: two

## [ ] a: A
Owns: a.txt

## [ ] b: B
Owns: b.txt
EOF
echo '{"type":"usage","model":"m","input_tokens":10,"output_tokens":5,"cost_usd":0.001}'
`

// coder.sh writes its task's file once the file "go" exists in the
// user's repository (a run that waits, for cancel), or at once.
const coderSh = `#!/bin/sh
echo '{"type":"usage","model":"m","input_tokens":100,"output_tokens":10,"cost_usd":0.01}'
if [ -n "$WAIT_FOR" ]; then
  i=0
  while [ ! -e "$WAIT_FOR" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
fi
echo "$MUSTER_TASK_ID" > "$MUSTER_TASK_ID.txt"
echo "wrote $MUSTER_TASK_ID.txt"
`

const valid = "# Plan: ok\n\n## [ ] a: A\nOwns: a.txt\n\n## [ ] b: B\nOwns: b.txt\n"

const cyclic = "# Plan: bad\n\n## [ ] a: A\nAfter: b\n\n## [ ] b: B\nAfter: a\n"

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// setup makes a repository with a command crew and connects an MCP
// client to `muster mcp --repo` over stdio.
func setup(t *testing.T, env ...string) (string, *mcp.ClientSession) {
	t.Helper()
	return setupWith(t, nil, env...)
}

// setupWith is setup with client options (handlers of notifications).
func setupWith(t *testing.T, opts *mcp.ClientOptions, env ...string) (string, *mcp.ClientSession) {
	t.Helper()
	repo, cmd := server(t, env...)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return repo, cs
}

// server makes the repository and the (unstarted) `muster mcp` command.
func server(t *testing.T, env ...string) (string, *exec.Cmd) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	tmp := t.TempDir()
	gitconfig := filepath.Join(tmp, "gitconfig")
	write(t, tmp, map[string]string{"gitconfig": "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"})
	repo := filepath.Join(tmp, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	base := []string{beMuster + "=1", "GIT_CONFIG_GLOBAL=" + gitconfig, "GIT_CONFIG_NOSYSTEM=1", "HOME=" + tmp,
		"XDG_CACHE_HOME=" + filepath.Join(tmp, "cache"), "PATH=" + os.Getenv("PATH"), "NO_COLOR=1"}
	for _, kv := range base[1:] {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	git(t, tmp, "init", "-q", repo)
	write(t, repo, map[string]string{"muster.toml": toml, "planner.sh": plannerSh, "coder.sh": coderSh, "README.md": "# r\n"})
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "mcp", "--repo", repo)
	cmd.Env = append(base, env...)
	cmd.Stderr = os.Stderr
	return repo, cmd
}

// A client that asks for progress hears of each try of the plan tool.
func TestPlanProgress(t *testing.T) {
	var mu sync.Mutex
	var heard []string
	_, cs := setupWith(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, fmt.Sprintf("%v %v %s", req.Params.ProgressToken, req.Params.Progress, req.Params.Message))
	}})
	params := &mcp.CallToolParams{Name: "plan", Arguments: map[string]any{"goal": "x", "executor": "bad", "output": "p.md", "tries": 2}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || !res.IsError {
		t.Fatalf("plan: %v %+v", err, res)
	}
	// Notifications may trail the result a little.
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(heard, "\n"), "try 2: ")
	}
	for i := 0; i < 200 && !done(); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(heard, "\n")
	if !strings.Contains(got, "planning with bad (command), try 1 of 2") || !strings.Contains(got, "try 2: 1 problems: p.md:2:") {
		t.Errorf("progress heard:\n%s", got)
	}
	for i, h := range heard {
		if !strings.HasPrefix(h, fmt.Sprintf("tok %d ", i+1)) {
			t.Errorf("notification %d: %q (want the token and progress %d)", i, h, i+1)
		}
	}
}

// A client's garbage line gets a JSON-RPC parse error; the session goes
// on, and the server exits 0 when stdin closes.
func TestGarbageLines(t *testing.T) {
	_, cmd := server(t)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		"garbage",
		`{"a": 1}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		"[1, 2",
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"validate","arguments":{"plan":"../x.md"}}}`,
	}
	if _, err := stdin.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var got []string
	for len(got) < 5 && sc.Scan() {
		got = append(got, sc.Text())
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the server did not exit 0 at the end of stdin: %v", err)
	}
	all := strings.Join(got, "\n")
	if len(got) != 5 || strings.Count(all, `"code":-32700`) != 3 || !strings.Contains(all, `"serverInfo":{"name":"muster"`) ||
		!strings.Contains(all, `"id":2,"result"`) || !strings.Contains(all, `"isError":true`) {
		t.Errorf("replies:\n%s", all)
	}
}

// call calls a tool; the result's text and structured content come back.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error %v", name, args, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	var obj map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &obj)
	}
	return res, strings.Join(text, "\n"), obj
}

func mustOK(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, map[string]any) {
	t.Helper()
	res, text, obj := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s %v: isError: %s", name, args, text)
	}
	return text, obj
}

func mustFail(t *testing.T, cs *mcp.ClientSession, name string, args any, want string) {
	t.Helper()
	res, text, _ := call(t, cs, name, args)
	if !res.IsError || !strings.Contains(text, want) {
		t.Errorf("%s %v: isError %v, text %q; want an error saying %q", name, args, res.IsError, text, want)
	}
}

func TestToolsList(t *testing.T) {
	_, cs := setup(t)
	if got := cs.InitializeResult().ServerInfo.Name; got != "muster" {
		t.Errorf("server name %q", got)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.Description == "" {
			t.Errorf("tool %s: no schema or description", tool.Name)
		}
	}
	if got := strings.Join(names, ","); got != "cancel,logs,plan,report,run,status,validate" {
		t.Errorf("tools %s", got)
	}
}

func TestValidateAndPlan(t *testing.T) {
	repo, cs := setup(t)
	outside := t.TempDir()
	write(t, repo, map[string]string{"good.md": valid, "bad.md": cyclic})
	write(t, outside, map[string]string{"secret.md": valid})
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(repo, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo, "out")); err != nil {
		t.Fatal(err)
	}

	_, obj := mustOK(t, cs, "validate", map[string]any{"plan": "good.md"})
	if obj["valid"] != true {
		t.Errorf("good.md: %v", obj)
	}
	mustFail(t, cs, "validate", map[string]any{"plan": "bad.md"}, "bad.md:4: dependency cycle")
	mustOK(t, cs, "validate", map[string]any{"plan": "new.md", "text": valid})
	mustFail(t, cs, "validate", map[string]any{"plan": "x.md", "text": cyclic}, "x.md:4: dependency cycle")
	// Problems in line order, as muster validate prints them (issue 25:
	// the checker finds the parse problem at line 9 first).
	res, text, obj := call(t, cs, "validate", map[string]any{"plan": "order.md", "text": "## [ ] a: A\nOwns: a.txt\nAfter: nosuch\n\nDo a.\n\n## [ ] b: B\nOwns: b.txt\nBogus: x\n\nDo b.\n"})
	if want := "order.md:3: task a: unknown dependency \"nosuch\"\norder.md:9: unknown key \"Bogus\""; !res.IsError || text != want {
		t.Errorf("validate order: %q, want %q (%v)", text, want, obj)
	}
	// Bad input: schema, paths that leave the repository, missing files.
	mustFail(t, cs, "validate", map[string]any{}, "plan")
	mustFail(t, cs, "validate", map[string]any{"plan": ""}, "plan")
	mustFail(t, cs, "validate", map[string]any{"plan": 3}, "plan")
	mustFail(t, cs, "validate", map[string]any{"plan": "good.md", "extra": 1}, "extra")
	mustFail(t, cs, "validate", map[string]any{"plan": "../good.md"}, `".." is not allowed`)
	mustFail(t, cs, "validate", map[string]any{"plan": filepath.Join(outside, "secret.md")}, "outside the repository")
	mustFail(t, cs, "validate", map[string]any{"plan": "link.md"}, "symlink that leads outside")
	mustFail(t, cs, "validate", map[string]any{"plan": "out/secret.md"}, "outside the repository")
	mustFail(t, cs, "validate", map[string]any{"plan": ".git/config"}, ".git are not allowed")
	mustFail(t, cs, "validate", map[string]any{"plan": "missing.md"}, "missing.md")

	text, obj = mustOK(t, cs, "plan", map[string]any{"goal": "two files"})
	if obj["valid"] != true || obj["path"] != "plan.md" || !strings.Contains(text, "## [ ] a: A") {
		t.Errorf("plan: %v\n%s", obj, text)
	}
	if _, err := os.Stat(filepath.Join(repo, "plan.md")); err != nil {
		t.Errorf("plan.md not written: %v", err)
	}
	mustFail(t, cs, "plan", map[string]any{"goal": "again"}, "exists already: pass force: true to replace it, or write another file with output FILE")
	mustOK(t, cs, "plan", map[string]any{"goal": "again", "force": true})
	mustOK(t, cs, "plan", map[string]any{"goal": "sub", "output": "plans/sub.md", "executor": "planner"})
	mustFail(t, cs, "plan", map[string]any{"goal": ""}, "goal")
	mustFail(t, cs, "plan", map[string]any{}, "goal")
	mustFail(t, cs, "plan", map[string]any{"goal": "x", "output": "../x.md"}, `".." is not allowed`)
	mustFail(t, cs, "plan", map[string]any{"goal": "x", "output": ".git/hooks/pre-commit.md"}, ".git are not allowed")
	mustFail(t, cs, "plan", map[string]any{"goal": "x", "output": "run.sh"}, "ends in .md")
	mustFail(t, cs, "plan", map[string]any{"goal": "x", "output": "p.yaml"}, "ends in .md")
	mustFail(t, cs, "plan", map[string]any{"goal": "x", "output": "out/x.md"}, "outside the repository")
	mustFail(t, cs, "plan", map[string]any{"goal": "x", "executor": "nobody", "output": "n.md"}, "executor nobody: no such executor")
	// Errors name the tool's parameters, never the command line's flags.
	for _, args := range []map[string]any{{"goal": "again"}, {"goal": "x", "executor": "nobody", "output": "n.md"}} {
		if _, text, _ := call(t, cs, "plan", args); strings.Contains(text, "--") || strings.Contains(text, "-o ") {
			t.Errorf("plan %v names a flag: %s", args, text)
		}
	}
	res, text, bad := call(t, cs, "plan", map[string]any{"goal": "x", "executor": "bad", "output": "sub/never.md", "tries": 2})
	if !res.IsError || bad["valid"] != false || bad["tries"] != 2.0 || !strings.Contains(text, "no valid plan after 2 tries") ||
		!strings.Contains(text, "sub/never.md:2: task a: unknown dependency") {
		t.Errorf("a planner that never validates: isError %v, %v\n%s", res.IsError, bad, text)
	}
	if _, err := os.Stat(filepath.Join(repo, "sub", "never.md")); err == nil {
		t.Error("an invalid plan was written")
	}
	mustFail(t, cs, "plan", map[string]any{"goal": "x", "tries": 99, "output": "n.md"}, "tries")
	if _, err := os.Stat(filepath.Join(outside, "x.md")); err == nil {
		t.Error("a plan was written outside the repository")
	}
}

func TestRunStatusReportLogsCancel(t *testing.T) {
	repo, cs := setup(t, "WAIT_FOR=")
	write(t, repo, map[string]string{"good.md": valid, "bad.md": cyclic})

	// Bad input to each run tool first; none of it stops the server.
	mustFail(t, cs, "run", map[string]any{}, "plan")
	mustFail(t, cs, "run", map[string]any{"plan": "bad.md"}, "not valid; nothing started")
	mustFail(t, cs, "run", map[string]any{"plan": "/etc/passwd"}, "outside the repository")
	mustFail(t, cs, "run", map[string]any{"plan": "good.md", "max_parallel": -1}, "max_parallel")
	mustFail(t, cs, "run", map[string]any{"plan": "good.md", "budget_usd": "lots"}, "budget_usd")
	mustFail(t, cs, "status", map[string]any{}, "no runs in")
	mustFail(t, cs, "status", map[string]any{"run": "../../etc"}, "run")
	mustFail(t, cs, "report", map[string]any{"run": 5}, "run")
	mustFail(t, cs, "report", map[string]any{"run": "nope"}, `no run "nope"`)
	mustFail(t, cs, "logs", map[string]any{}, "task")
	mustFail(t, cs, "logs", map[string]any{"task": "a", "attempt": -1}, "attempt")
	mustFail(t, cs, "cancel", map[string]any{"run": "nope"}, `no run "nope"`)
	mustFail(t, cs, "cancel", map[string]any{"run": "a/b"}, "run")

	_, obj := mustOK(t, cs, "run", map[string]any{"plan": "good.md", "max_parallel": 2, "budget_usd": 5})
	id, _ := obj["run"].(string)
	if id == "" {
		t.Fatalf("run: %v", obj)
	}
	waitGone(t, int(obj["pid"].(float64)))
	st := waitState(t, cs, id, "succeeded")
	// The run's process still gives its clones back to muster's cache
	// after the journal says succeeded: let it finish before the
	// temporary directory goes.
	if pid, ok := obj["pid"].(float64); ok {
		waitExit(int(pid))
	}
	// The plan as a run started at the repository's top names it.
	if st["plan"] != "good.md" {
		t.Errorf("status plan %v, want good.md", st["plan"])
	}
	if tasks, _ := st["tasks"].([]any); len(tasks) != 2 {
		t.Errorf("status tasks %v", st["tasks"])
	}
	_, rep := mustOK(t, cs, "report", map[string]any{"run": id})
	total, _ := rep["total"].(map[string]any)
	if clones, _ := rep["clones"].([]any); len(clones) == 0 || total["input_tokens"] != 200.0 {
		t.Errorf("report %v", rep)
	}
	_, latest := mustOK(t, cs, "status", map[string]any{})
	if latest["run"] != id {
		t.Errorf("latest run %v, want %s", latest["run"], id)
	}
	text, lg := mustOK(t, cs, "logs", map[string]any{"run": id, "task": "a"})
	if lg["task"] != "a" || !strings.Contains(text, "wrote a.txt") {
		t.Errorf("logs: %v\n%s", lg, text)
	}
	mustOK(t, cs, "logs", map[string]any{"run": id, "task": "b", "attempt": 1})
	mustFail(t, cs, "logs", map[string]any{"run": id, "task": "a", "attempt": 9}, "attempt")
	mustFail(t, cs, "logs", map[string]any{"run": id, "task": "zz"}, `no task "zz"`)
	mustFail(t, cs, "cancel", map[string]any{"run": id}, "is not running")
	if _, err := os.Stat(filepath.Join(repo, ".git", "muster", "runs", id, "output.log")); err != nil {
		t.Errorf("no output file: %v", err)
	}
}

// startWaiting starts, through MCP, a run whose coder waits for the
// file goFile; it returns the run and its process once the run is
// running. The test's end waits for that process to be gone.
func startWaiting(t *testing.T, goFile string) (string, *mcp.ClientSession, string, int) {
	t.Helper()
	repo, cs := setup(t, "WAIT_FOR="+goFile)
	write(t, repo, map[string]string{"good.md": valid})
	_, obj := mustOK(t, cs, "run", map[string]any{"plan": "good.md"})
	id, _ := obj["run"].(string)
	pid := int(obj["pid"].(float64))
	waitGone(t, pid) // after the kill below (cleanups run last first)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	waitState(t, cs, id, "running")
	return repo, cs, id, pid
}

// cancel stops a run as Ctrl-C would: interrupted, resumable.
func TestCancel(t *testing.T) {
	repo, cs, id, pid := startWaiting(t, filepath.Join(t.TempDir(), "go"))
	_, c := mustOK(t, cs, "cancel", map[string]any{"run": id})
	if c["pid"] != float64(pid) {
		t.Errorf("cancel %v, want pid %d", c, pid)
	}
	st := waitState(t, cs, id, "interrupted")
	if st["run"] != id {
		t.Errorf("status %v", st)
	}
	mustFail(t, cs, "cancel", map[string]any{"run": id}, "not running")
	// A forged record naming another process is refused.
	rec := filepath.Join(repo, ".git", "muster", "runs", id, "mcp-process.json")
	forged, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "start": 1, "run": id})
	if err := os.WriteFile(rec, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	mustFail(t, cs, "cancel", map[string]any{"run": id}, "not running")
}

// A run started through MCP goes on after the session (and the server)
// ends, and finishes.
func TestRunOutlivesSession(t *testing.T) {
	goFile := filepath.Join(t.TempDir(), "go")
	repo, cs, id, _ := startWaiting(t, goFile)
	if err := cs.Close(); err != nil { // the server exits with its stdin
		t.Logf("close: %v", err)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var state string
	for i := 0; i < 1200 && state != "succeeded"; i++ {
		var out, errOut strings.Builder
		io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
		if cli.Execute(context.Background(), io, []string{"status", id, "--json", "--repo", repo}) == 0 {
			var st map[string]any
			_ = json.Unmarshal([]byte(out.String()), &st)
			state, _ = st["state"].(string)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if state != "succeeded" {
		t.Fatalf("the run after the session: %s", state)
	}
}

// waitGone makes the test's end wait until the detached run's process is
// gone (it may still be putting its clones back when the run is over),
// so that the temporary directories can be removed.
func waitGone(t *testing.T, pid int) {
	t.Cleanup(func() {
		for i := 0; i < 1200; i++ {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				return
			}
			if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("the run's process %d is still there", pid)
	})
}

// waitState polls status until the run is in state (bounded).
// waitExit waits (up to a minute) until process pid is gone.
func waitExit(pid int) {
	for i := 0; i < 1200 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
}

func waitState(t *testing.T, cs *mcp.ClientSession, id, state string) map[string]any {
	t.Helper()
	var st map[string]any
	for i := 0; i < 1200; i++ {
		res, _, obj := call(t, cs, "status", map[string]any{"run": id})
		if !res.IsError {
			st = obj
			if obj["state"] == state {
				return obj
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("run %s never %s: %v", id, state, st)
	return nil
}

// Command fakeagent is a scriptable stand-in for a coding agent, speaking
// muster's command executor protocol (ARCHITECTURE.md §2.5). Tests and users'
// experiments drive it with flags (or the same flags in FAKEAGENT_ARGS):
//
//	fakeagent --say "working" --write hello.txt=hi --usage in=100,out=20,model=m,cost=0.01 \
//	          --tool Write=hello.txt --sleep 2s --exit 0
//
// Actions run in a fixed order: read the prompt from stdin, check it
// against MUSTER_PROMPT_FILE, dump the environment, spawn a child, echo
// the prompt, say, tools, writes and appends, usage, findings, satisfied,
// notes, sleep, then exit.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if extra := os.Getenv("FAKEAGENT_ARGS"); extra != "" {
		args = append(strings.Fields(extra), args...)
	}
	o, ok := parseFlags(args, stderr)
	if !ok {
		return 2
	}
	if *o.ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	prompt, code := o.start(stdin, stderr)
	if code != 0 {
		return code
	}
	if *o.echoPrompt {
		fmt.Fprint(stdout, string(prompt))
		if len(prompt) > 0 && prompt[len(prompt)-1] != '\n' {
			fmt.Fprintln(stdout)
		}
	}
	for _, s := range o.says {
		fmt.Fprintln(stdout, s)
	}
	if code := o.act(stdout, stderr); code != 0 {
		return code
	}
	return o.finish(stdout)
}

// options are fakeagent's flags.
type options struct {
	says, writes, appends, tools, usages, findings, notes list

	review, satisfied, ignoreTerm, echoPrompt *bool
	sleep                                     *time.Duration
	exit, failRound, failAttempts             *int
	envFile, childPID, planOut                *string
}

// parseFlags reads the flags; false when they do not parse (the flag
// package said why on stderr).
func parseFlags(args []string, stderr io.Writer) (*options, bool) {
	fs := flag.NewFlagSet("fakeagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.Var(&o.says, "say", "print a transcript line (repeatable)")
	fs.Var(&o.writes, "write", "PATH=CONTENT: write a file, relative to the working directory (repeatable; \\n in CONTENT is a newline)")
	fs.Var(&o.appends, "append", "PATH=CONTENT: append to a file (repeatable)")
	fs.Var(&o.tools, "tool", "NAME=ARGS: print a tool record (repeatable)")
	fs.Var(&o.usages, "usage", "in=N,out=N,cache_read=N,cache_write=N,model=M,cost=USD: print a usage record (repeatable)")
	fs.Var(&o.findings, "finding", "SEVERITY:TITLE[:PATH]: add a review finding (repeatable)")
	fs.Var(&o.notes, "notes", "print a notes record (repeatable)")
	o.review = fs.Bool("review", false, "print a findings record even when there are no findings (approve)")
	o.satisfied = fs.Bool("satisfied", false, "print a satisfied record")
	o.sleep = fs.Duration("sleep", 0, "sleep this long before exiting")
	o.exit = fs.Int("exit", 0, "exit status")
	o.failRound = fs.Int("fail-round", -1, "exit 1 when MUSTER_ROUND is this number")
	o.failAttempts = fs.Int("fail-attempts", 0, "exit 1 while MUSTER_ATTEMPT is at most this number")
	o.ignoreTerm = fs.Bool("ignore-term", false, "ignore SIGTERM (muster must SIGKILL)")
	o.envFile = fs.String("env-file", "", "write the environment to this file, one VAR=value a line")
	o.echoPrompt = fs.Bool("echo-prompt", false, "print the prompt read from stdin as transcript")
	o.childPID = fs.String("child-pidfile", "", "start a child process that sleeps an hour and write its pid here")
	o.planOut = fs.String("plan-out", "", "write this text to MUSTER_PLAN_OUT")
	return o, fs.Parse(args) == nil
}

// start reads the prompt (checking MUSTER_PROMPT_FILE holds the same),
// writes the environment and starts the child the flags ask for; a
// non-zero code when one of these fails.
func (o *options) start(stdin io.Reader, stderr io.Writer) ([]byte, int) {
	prompt, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintln(stderr, "fakeagent: read stdin:", err)
		return nil, 3
	}
	if pf := os.Getenv("MUSTER_PROMPT_FILE"); pf != "" {
		b, err := os.ReadFile(pf)
		if err != nil || string(b) != string(prompt) {
			fmt.Fprintln(stderr, "fakeagent: MUSTER_PROMPT_FILE differs from stdin")
			return nil, 3
		}
	}
	if *o.envFile != "" {
		if err := os.WriteFile(*o.envFile, []byte(strings.Join(os.Environ(), "\n")+"\n"), 0o600); err != nil {
			fmt.Fprintln(stderr, "fakeagent:", err)
			return nil, 3
		}
	}
	if *o.childPID != "" {
		self, _ := os.Executable()
		c := exec.Command(self, "--sleep", "1h")
		if err := c.Start(); err != nil {
			fmt.Fprintln(stderr, "fakeagent: child:", err)
			return nil, 3
		}
		_ = os.WriteFile(*o.childPID, []byte(strconv.Itoa(c.Process.Pid)), 0o600)
	}
	return prompt, 0
}

// act prints the tool records, writes the files and prints the usage,
// findings, satisfied and notes records, in that order.
func (o *options) act(stdout, stderr io.Writer) int {
	rec := func(v map[string]any) {
		b, _ := json.Marshal(v)
		fmt.Fprintln(stdout, string(b))
	}
	for _, t := range o.tools {
		name, a, _ := strings.Cut(t, "=")
		rec(map[string]any{"type": "tool", "name": name, "args": a})
	}
	for _, w := range o.writes {
		if err := writeFile(w, false); err != nil {
			fmt.Fprintln(stderr, "fakeagent:", err)
			return 3
		}
	}
	for _, w := range o.appends {
		if err := writeFile(w, true); err != nil {
			fmt.Fprintln(stderr, "fakeagent:", err)
			return 3
		}
	}
	for _, u := range o.usages {
		r, err := usageRecord(u)
		if err != nil {
			fmt.Fprintln(stderr, "fakeagent:", err)
			return 2
		}
		rec(r)
	}
	if len(o.findings) > 0 || *o.review {
		rec(map[string]any{"type": "findings", "findings": findingRecords(o.findings)})
	}
	if *o.satisfied {
		rec(map[string]any{"type": "satisfied"})
	}
	for _, n := range o.notes {
		rec(map[string]any{"type": "notes", "text": n})
	}
	return 0
}

// findingRecords reads --finding values, SEVERITY:TITLE[:PATH].
func findingRecords(findings []string) []any {
	fl := []any{}
	for _, f := range findings {
		parts := strings.SplitN(f, ":", 3)
		m := map[string]any{"severity": parts[0]}
		if len(parts) > 1 {
			m["title"] = parts[1]
		}
		if len(parts) > 2 {
			m["path"] = parts[2]
		}
		fl = append(fl, m)
	}
	return fl
}

// finish writes the plan, sleeps, and returns the exit status the flags
// ask for.
func (o *options) finish(stdout io.Writer) int {
	if *o.planOut != "" {
		if p := os.Getenv("MUSTER_PLAN_OUT"); p != "" {
			_ = os.WriteFile(p, []byte(strings.ReplaceAll(*o.planOut, `\n`, "\n")), 0o600)
		}
	}
	if *o.sleep > 0 {
		time.Sleep(*o.sleep)
	}
	if r, err := strconv.Atoi(os.Getenv("MUSTER_ROUND")); err == nil && r == *o.failRound {
		fmt.Fprintf(stdout, "fakeagent: failing on round %d\n", r)
		return 1
	}
	if a, err := strconv.Atoi(os.Getenv("MUSTER_ATTEMPT")); err == nil && a <= *o.failAttempts {
		fmt.Fprintf(stdout, "fakeagent: failing on attempt %d\n", a)
		return 1
	}
	return *o.exit
}

func writeFile(spec string, appendTo bool) error {
	path, content, ok := strings.Cut(spec, "=")
	if !ok || path == "" {
		return fmt.Errorf("want PATH=CONTENT, got %q", spec)
	}
	content = strings.ReplaceAll(content, `\n`, "\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if appendTo {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func usageRecord(spec string) (map[string]any, error) {
	r := map[string]any{"type": "usage"}
	keys := map[string]string{"in": "input_tokens", "out": "output_tokens", "cache_read": "cache_read_tokens", "cache_write": "cache_write_tokens"}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "model":
			r["model"] = v
		case "cost":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("usage cost %q: %w", v, err)
			}
			r["cost_usd"] = f
		default:
			name, ok := keys[k]
			if !ok {
				return nil, fmt.Errorf("usage: unknown key %q", k)
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("usage %s %q: %w", k, v, err)
			}
			r[name] = n
		}
	}
	return r, nil
}

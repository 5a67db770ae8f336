// Package mcp is the muster mcp command: a Model Context Protocol server
// on stdio (package mcpserver) whose tools are wired here to muster's own
// commands, in one repository.
package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/logs"
	"github.com/muster-run/muster/internal/cli/plan"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/cli/status"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/journal"
	"github.com/muster-run/muster/mcpserver"
	rep "github.com/muster-run/muster/report"
)

// NewCmd returns muster mcp.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	var repoDir, config string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "An MCP server on stdio: validate, plan, run, status, report, logs, cancel",
		Long: `Serve muster's tools to an agent over the Model Context Protocol, on stdin and
stdout, for the repository at --repo (default: the current directory):

  validate {plan, text?}                  the problems of a plan (isError when any)
  plan     {goal, executor?, output?, force?, tries?}
                                          a planner agent writes a validated plan
  run      {plan, max_parallel?, budget_usd?}
                                          start a detached muster run; its ID at once
  status   {run?}                         the status --json object
  report   {run?}                         tokens and cost by executor clone
  logs     {run?, task, attempt?}         what an attempt did
  cancel   {run?}                         SIGINT to a run this server started

Add it to Claude Code with: claude mcp add muster -- muster mcp
(docs/mcp.md has Codex, Gemini CLI and opencode).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			repo, err := cmdutil.OpenRepo(cmd.Context(), repoDir)
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return cmdutil.Env("find the muster binary: %w", err)
			}
			b := &backend{repo: repo, config: config, exe: exe}
			if err := mcpserver.Serve(cmd.Context(), b, cmd.Root().Version); err != nil && cmd.Context().Err() == nil {
				return cmdutil.Env("mcp: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repoDir, "repo", "", "repository (default: current directory)")
	cmd.Flags().StringVar(&config, "config", "", "config file (default: muster.toml at the repository root, if present)")
	return cmd
}

// backend is mcpserver.Backend over muster's commands.
type backend struct {
	repo   *cmdutil.Repo
	config string
	exe    string
}

var _ mcpserver.Backend = (*backend)(nil)

// maxPlanFile bounds a plan file the validate tool reads.
const maxPlanFile = 4 << 20

func (b *backend) Root() string { return b.repo.Top }

func (b *backend) loadConfig() (*muster.Config, error) {
	return preflight.LoadConfig(b.repo, &preflight.Flags{Config: b.config})
}

// rel names a path inside the repository relative to its top.
func (b *backend) rel(p string) string {
	if r, err := filepath.Rel(b.repo.Top, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}

func (b *backend) Validate(ctx context.Context, path, text string) (*mcpserver.ValidateOutput, error) {
	cfg, err := b.loadConfig()
	if err != nil {
		return nil, err
	}
	data := []byte(text)
	if text == "" {
		if data, err = readBounded(path, maxPlanFile); err != nil {
			return nil, fmt.Errorf("read plan %s: %w", b.rel(path), err)
		}
	}
	_, probs := plan.Checker(cfg)(b.rel(path), data)
	return &mcpserver.ValidateOutput{Valid: len(probs.Errors()) == 0, Problems: problems(probs)}, nil
}

func (b *backend) Plan(ctx context.Context, in mcpserver.PlanInput, output string, progress func(string)) (*mcpserver.PlanOutput, error) {
	cfg, err := b.loadConfig()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
		return nil, fmt.Errorf("create the plan's directory: %w", err)
	}
	var log io.Writer
	if progress != nil {
		log = &lineWriter{emit: progress}
	}
	out, err := plan.Make(ctx, b.repo, cfg, plan.Request{Goal: in.Goal, Executor: in.Executor, Output: output, Force: in.Force, Tries: in.Tries, Log: log})
	if err != nil {
		return nil, err
	}
	res := &mcpserver.PlanOutput{Valid: out.Valid(), Session: out.Session, Tries: out.Tries, Problems: problems(out.Problems), CostUSD: out.Usage.USD()}
	if out.Valid() {
		res.Path, res.Plan = b.rel(out.Path), string(out.Text)
		res.Summary = strings.Join(out.Summary.Lines(), "\n")
	}
	return res, nil
}

func (b *backend) Run(ctx context.Context, path string, in mcpserver.RunInput) (*mcpserver.RunOutput, error) {
	cfg, err := b.loadConfig()
	if err != nil {
		return nil, err
	}
	data, err := readBounded(path, maxPlanFile)
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", b.rel(path), err)
	}
	// The run checks the plan again; checking here answers at once.
	if _, probs := plan.Checker(cfg)(b.rel(path), data); len(probs.Errors()) > 0 {
		return nil, fmt.Errorf("the plan is not valid; nothing started:\n%s", lines(probs.Errors()))
	}
	id := cmdutil.NewRunID(time.Now())
	dir := b.repo.RunDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the run directory: %w", err)
	}
	// The plan relative to the repository's top, where the run starts:
	// the run records and reports it as a run started there would.
	argv := []string{b.exe, "run", b.rel(path), "--repo", b.repo.Top, "--run-id", id, "--plain"}
	if b.config != "" {
		argv = append(argv, "--config", b.config)
	}
	if in.MaxParallel > 0 {
		argv = append(argv, "--max-parallel", strconv.Itoa(in.MaxParallel))
	}
	if in.BudgetUSD > 0 {
		argv = append(argv, "--budget-usd", strconv.FormatFloat(in.BudgetUSD, 'f', -1, 64))
	}
	p, err := startDetached(dir, id, b.repo.Top, argv)
	if err != nil {
		return nil, fmt.Errorf("start muster run: %w", err)
	}
	out := filepath.Join(dir, outputFile)
	// Answer once the journal exists (status works from then on), or
	// with the output of a run that ended before it began.
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(b.repo.JournalPath(id)); err == nil {
			break
		}
		if p.alive() != nil {
			tail, _ := readTail(out, 4<<10)
			return nil, fmt.Errorf("the run ended before it started:\n%s", textsafe.Sanitize(tail))
		}
		time.Sleep(25 * time.Millisecond)
	}
	return &mcpserver.RunOutput{Run: id, PID: p.PID, Dir: dir, Output: out}, nil
}

// events resolves a run ("" for the latest) and reads its journal.
func (b *backend) events(run string) (string, []muster.Event, *engine.State, error) {
	id, err := b.repo.ResolveRun(run)
	if err != nil {
		return "", nil, nil, err
	}
	evs, err := b.repo.ReadRun(id)
	if err != nil {
		return "", nil, nil, err
	}
	st, err := engine.Replay(evs)
	if err != nil {
		return "", nil, nil, cmdutil.Env("journal of run %s does not replay: %w", id, err)
	}
	return id, evs, st, nil
}

func (b *backend) Status(ctx context.Context, run string) (any, error) {
	id, _, st, err := b.events(run)
	if err != nil {
		return nil, err
	}
	return status.Build(st, b.repo.RunDir(id), journal.Locked(b.repo.JournalPath(id))), nil
}

func (b *backend) Report(ctx context.Context, run string) (*mcpserver.ReportOutput, error) {
	id, evs, st, err := b.events(run)
	if err != nil {
		return nil, err
	}
	s := status.Build(st, b.repo.RunDir(id), journal.Locked(b.repo.JournalPath(id)))
	keys, by := rep.ByClone(evs)
	out := &mcpserver.ReportOutput{Run: id, State: s.State, Clones: []mcpserver.CloneUsage{}, Total: mcpserver.CloneUsage{Clone: "total"}}
	var total muster.Usage
	for _, k := range keys {
		u := by[k]
		total.Add(u)
		out.Clones = append(out.Clones, cloneUsage(k, u))
	}
	out.Total = cloneUsage("total", total)
	return out, nil
}

func cloneUsage(name string, u muster.Usage) mcpserver.CloneUsage {
	return mcpserver.CloneUsage{Clone: name, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.USD(), Estimated: u.Estimated}
}

// maxLog bounds the log the logs tool returns.
const maxLog = 256 << 10

func (b *backend) Logs(ctx context.Context, in mcpserver.LogsInput) (*mcpserver.LogsOutput, error) {
	id, _, st, err := b.events(in.Run)
	if err != nil {
		return nil, err
	}
	if st.Tasks[muster.TaskID(in.Task)] == nil {
		return nil, cmdutil.Invalid("run %s has no task %q", id, in.Task)
	}
	var stdout, stderr bytes.Buffer
	lio := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &limited{w: &stdout, n: maxLog}, ErrOut: &limited{w: &stderr, n: 16 << 10}}
	if err := logs.Run(ctx, lio, &logs.Options{Repo: b.repo.Top, Run: id, Task: in.Task, Attempt: in.Attempt}); err != nil {
		return nil, err
	}
	if stdout.Len() == 0 {
		stdout.Write(stderr.Bytes())
	}
	return &mcpserver.LogsOutput{Run: id, Task: in.Task, Log: stdout.String()}, nil
}

func (b *backend) Cancel(ctx context.Context, run string) (*mcpserver.CancelOutput, error) {
	id, _, st, err := b.events(run)
	if err != nil {
		return nil, err
	}
	if b.repo.IsPlanSession(id) {
		return nil, cmdutil.Invalid("%s is a plan session, not a run", id)
	}
	if st.RunState != muster.RunRunning {
		return nil, cmdutil.Invalid("run %s is not running: it has ended (%s); nothing to cancel", id, st.RunState)
	}
	p, err := readProcess(b.repo.RunDir(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, cmdutil.Invalid("run %s was not started by muster mcp: stop it where it runs (Ctrl-C)", id)
	}
	if err != nil {
		return nil, err
	}
	if p.Run != id {
		return nil, cmdutil.Invalid("run %s: its process record names run %q; nothing signalled", id, p.Run)
	}
	if err := p.interrupt(); err != nil {
		if errors.Is(err, errGone) {
			return nil, cmdutil.Invalid("run %s is not running (its process %d has ended); resume it with muster resume %s if it did not finish", id, p.PID, id)
		}
		return nil, err
	}
	return &mcpserver.CancelOutput{Run: id, PID: p.PID,
		Message: fmt.Sprintf("sent SIGINT to run %s (pid %d): agents get SIGTERM, then SIGKILL after the grace period; the run is resumable with muster resume %s", id, p.PID, id)}, nil
}

func problems(ps muster.Problems) []mcpserver.Problem {
	out := []mcpserver.Problem{}
	for _, p := range plan.Problems(ps) {
		out = append(out, mcpserver.Problem{File: p.File, Line: p.Line, Severity: p.Severity, Message: p.Message, Text: p.Text})
	}
	return out
}

func lines(ps muster.Problems) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, "\n")
}

func readBounded(path string, n int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if st.Size() > n {
		return nil, fmt.Errorf("larger than %d bytes", n)
	}
	return os.ReadFile(path)
}

func readTail(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		if _, err := f.Seek(-n, io.SeekEnd); err != nil {
			return "", err
		}
	}
	data, err := io.ReadAll(f)
	return string(data), err
}

// lineWriter calls emit with each whole line written to it.
type lineWriter struct {
	emit func(string)
	buf  []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if line := strings.TrimSpace(string(l.buf[:i])); line != "" {
			l.emit(line)
		}
		l.buf = l.buf[i+1:]
	}
}

// limited writes at most n bytes to w and drops the rest.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
		l.n -= k
	}
	return len(p), nil
}

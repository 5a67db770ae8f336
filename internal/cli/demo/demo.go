// Package demo is the muster demo command: muster's main job on built-in
// defaults. It makes a scratch repository holding a small real project
// and a plan of ten tasks, and runs it with a simulated crew of two
// executors with two clones each.
package demo

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/cli/report"
	"github.com/muster-run/muster/internal/cli/runner"
	rep "github.com/muster-run/muster/report"
)

//go:embed project
var project embed.FS

// NewCmd returns muster demo.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	var dir string
	var speed float64
	f := &preflight.Flags{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a sample plan with a simulated crew in a scratch repository",
		Long: `Make a scratch git repository with a small real project (textkit, shell text
tools), a plan of ten tasks with dependencies and a muster.toml with two
simulated executors of two clones each, then run it: several tasks work at
once, one task gets a gate fix round and one a review finding. Needs only git.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), io, dir, speed, f)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "make the scratch repository here (created if missing; default: a new temp dir)")
	cmd.Flags().Float64Var(&speed, "speed", 1, "scale the simulated agents' delays (0.1 is ten times faster, 0 no delay)")
	cmd.Flags().BoolVar(&f.JSON, "json", false, "write the journal's events to stdout as JSON lines")
	cmd.Flags().BoolVar(&f.Plain, "plain", false, "plain progress lines even on a terminal")
	cmd.Flags().BoolVar(&f.Verbose, "verbose", false, "also print tool uses and passing gates")
	return cmd
}

func runDemo(ctx context.Context, io *cmdutil.IOStreams, dir string, speed float64, f *preflight.Flags) error {
	if _, err := exec.LookPath("git"); err != nil {
		return cmdutil.Env("git is not installed: the demo needs the git command")
	}
	if speed < 0 {
		return cmdutil.FlagErrorf("--speed must not be negative")
	}
	dir, err := demoDir(dir)
	if err != nil {
		return err
	}
	if err := scaffold(ctx, dir); err != nil {
		return err
	}
	fmt.Fprintf(io.ErrOut, "muster demo: scratch repository %s\n\n", dir)
	f.Repo = dir
	cfgFlags := *f
	repo, err := cmdutil.OpenRepo(ctx, dir)
	if err != nil {
		return err
	}
	cfg, err := preflight.LoadConfig(repo, &cfgFlags)
	if err != nil {
		return err
	}
	if speed == 0 {
		// The sim kind reads a zero Speed as "unset" (1); the flag's 0
		// means no delay.
		speed = 1e-9
	}
	for _, e := range cfg.Executors {
		e.Speed = speed
	}
	maxRunning := 0
	s := &runner.Session{}
	start := time.Now()
	sess, runErr := runner.StartWith(ctx, io, filepath.Join(dir, "plan.md"), f, cfg, func(e *muster.Event, st *engine.State) {
		if n := len(st.Running()); n > maxRunning {
			maxRunning = n
		}
	})
	if sess != nil {
		s = sess
	}
	if s.State == nil || s.State.Run == "" {
		return runErr
	}
	if events, err := repo.ReadRun(s.RunID); err == nil {
		summary(ctx, io.ErrOut, repo, s, dir, events, maxRunning, time.Since(start))
	}
	return runErr
}

// demoDir makes the demo's directory (a new temp directory when dir is
// empty) and returns its absolute path.
func demoDir(dir string) (string, error) {
	var err error
	if dir == "" {
		if dir, err = os.MkdirTemp("", "muster-demo-"); err != nil {
			return "", cmdutil.Env("make a temp dir: %w", err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", cmdutil.Env("make %s: %w", dir, err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", cmdutil.Env("%w", err)
	}
	return dir, nil
}

// summary prints what the demo did: its parallelism and time, each
// clone's usage and share, the HTML report and where to look next.
func summary(ctx context.Context, w io.Writer, repo *cmdutil.Repo, s *runner.Session, dir string, events []muster.Event, maxRunning int, took time.Duration) {
	fmt.Fprintf(w, "\nat most %d tasks worked at once; the demo took %s\n", maxRunning, took.Round(100*time.Millisecond))
	keys, by := rep.ByClone(events)
	var total muster.Usage
	for _, k := range keys {
		total.Add(by[k])
	}
	fmt.Fprintf(w, "\n  %-10s %10s %10s %10s %6s\n", "CLONE", "INPUT", "OUTPUT", "COST", "SHARE")
	for _, k := range keys {
		u := by[k]
		share := 0.0
		if total.Tokens() > 0 {
			share = 100 * float64(u.Tokens()) / float64(total.Tokens())
		}
		fmt.Fprintf(w, "  %-10s %10d %10d %10s %5.1f%%\n", k, u.InputTokens, u.OutputTokens, muster.FormatUSD(u.CostMicros), share)
	}
	fmt.Fprintf(w, "  %-10s %10d %10d %10s\n", "total", total.InputTokens, total.OutputTokens, muster.FormatUSD(total.CostMicros))
	html := filepath.Join(repo.RunDir(s.RunID), "report.html")
	if err := report.WriteHTML(html, events, report.Verification(context.WithoutCancel(ctx), repo, s.RunID)); err != nil {
		fmt.Fprintf(w, "\nno HTML report: %v\n", err)
	} else {
		fmt.Fprintf(w, "\nreport: %s\n", html)
	}
	fmt.Fprintf(w, "the repository is %s; its run branch is %s\n", dir, s.State.Branch)
	fmt.Fprintf(w, "look at it:  git -C %s log --oneline %s\n", shellQuote(dir), s.State.Branch)
	fmt.Fprintf(w, "status:      muster status --repo %s\n", shellQuote(dir))
}

// scaffold writes the project, its plan and config, and commits them.
func scaffold(ctx context.Context, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return cmdutil.Invalid("%s is a git repository already: give --dir a new or empty directory", dir)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) > 0 {
		return cmdutil.Invalid("%s is not empty: give --dir a new or empty directory", dir)
	}
	err := fs.WalkDir(project, "project", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := project.ReadFile(p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, strings.TrimPrefix(p, "project/"))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return cmdutil.Env("write the demo project: %w", err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=muster demo", "-c", "user.email=demo@muster.invalid", "commit", "-q", "-m", "textkit: start the project"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return cmdutil.Env("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	// The run's own commits need an author; set one for this scratch repo only.
	for _, kv := range [][2]string{{"user.name", "muster demo"}, {"user.email", "demo@muster.invalid"}} {
		cmd := exec.CommandContext(ctx, "git", "config", kv[0], kv[1])
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return cmdutil.Env("git config: %w: %s", err, out)
		}
	}
	return nil
}

func shellQuote(s string) string {
	if strings.ContainsAny(s, " '\"$\\") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

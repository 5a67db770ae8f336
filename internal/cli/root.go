// Package cli is muster's command tree: the only place that wires
// adapters together. Main runs a command and returns its exit status.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/cli/clean"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/demo"
	"github.com/muster-run/muster/internal/cli/doctor"
	clifleet "github.com/muster-run/muster/internal/cli/fleet"
	"github.com/muster-run/muster/internal/cli/initcmd"
	"github.com/muster-run/muster/internal/cli/logs"
	"github.com/muster-run/muster/internal/cli/mcp"
	"github.com/muster-run/muster/internal/cli/mockllm"
	"github.com/muster-run/muster/internal/cli/plan"
	"github.com/muster-run/muster/internal/cli/pr"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/cli/report"
	"github.com/muster-run/muster/internal/cli/resume"
	"github.com/muster-run/muster/internal/cli/run"
	"github.com/muster-run/muster/internal/cli/runs"
	"github.com/muster-run/muster/internal/cli/status"
	"github.com/muster-run/muster/internal/cli/usage"
	"github.com/muster-run/muster/internal/cli/validate"
	"github.com/muster-run/muster/internal/cli/verify"
	"github.com/muster-run/muster/internal/cli/watch"
	"github.com/muster-run/muster/internal/cli/worker"
	"github.com/muster-run/muster/internal/proc"
	"github.com/muster-run/muster/internal/redact"
	"github.com/muster-run/muster/internal/suggest"
)

// NewRoot returns the root command.
func NewRoot(io *cmdutil.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "muster",
		Short: "Run a plan of coding tasks across a crew of AI coding agents",
		Long: `muster runs a plan of coding tasks across a crew of AI coding agents (Claude
Code, Codex CLI, Gemini CLI, opencode, HTTP models, any command) in parallel
clones of a git repository, inside declared file boundaries, through gates and reviews. It leaves
one commit per task on a run branch, a journal that survives kill -9, and a
cost report down to each agent clone.

Start with: muster demo`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetIn(io.In)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &cmdutil.FlagError{Err: fmt.Errorf("%w%s\nsee: %s --help", err, flagHint(cmd, err), cmd.CommandPath())}
	})
	root.AddCommand(
		demo.NewCmd(io),
		validate.NewCmd(io),
		plan.NewCmd(io),
		mcp.NewCmd(io),
		verify.NewCmd(io),
		pr.NewCmd(io),
		run.NewCmd(io),
		resume.NewCmd(io),
		status.NewCmd(io),
		runs.NewCmd(io),
		report.NewCmd(io),
		logs.NewCmd(io),
		initcmd.NewCmd(io),
		usage.NewCmd(),
		watch.NewCmd(resolveJournal),
		mockllm.NewCmd(),
		doctorCmd(),
		clean.NewCmd(io),
		clifleet.NewCmd(io),
		worker.NewCmd(io, buildVersion()),
	)
	for _, c := range root.Commands() {
		c.SilenceUsage = true
	}
	flagArgs(root)
	return root
}

// flagArgs makes a wrong number of arguments, or an unknown subcommand,
// bad input (exit 2) on every command of the tree.
func flagArgs(c *cobra.Command) {
	if c.Args == nil && c.HasParent() && c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = unknownSubcommand
	}
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return &cmdutil.FlagError{Err: fmt.Errorf("%w\nsee: %s --help", err, cmd.CommandPath())}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		flagArgs(sub)
	}
}

// flagHint is "; did you mean --NAME?" for an unknown long flag close
// to one the command takes (its own or inherited), else "": the one
// place every command's mistyped flag is answered.
func flagHint(cmd *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	name, _, _ = strings.Cut(name, "=")
	var names []string
	add := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	if n := suggest.Nearest(name, names); n != "" {
		return fmt.Sprintf("; did you mean --%s?", n)
	}
	return ""
}

// unknownSubcommand rejects arguments to a command that only groups
// subcommands, as cobra would.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return nil
}

// resolveJournal maps a run ID ("" for the latest) in a repository (""
// for the current directory's) to its journal.
func resolveJournal(dir, run string) (string, error) {
	repo, err := cmdutil.OpenRepo(context.Background(), dir)
	if err != nil {
		return "", err
	}
	id, err := repo.ResolveRun(run)
	if err != nil {
		return "", err
	}
	return repo.JournalPath(id), nil
}

// doctorCmd is muster doctor, which also checks that relative agent
// commands are committed (they are resolved in each task's worktree).
// --repo and --config say which repository and config it checks.
func doctorCmd() *cobra.Command {
	opts := &doctor.Options{}
	opts.LoadConfig = func() (*muster.Config, error) {
		// A relative command program is looked for in the repository,
		// not in the current directory (--repo).
		if repo, err := cmdutil.OpenRepo(context.Background(), opts.Repo); err == nil {
			opts.Check.Dir = repo.Top
		}
		return repoConfig(opts.Repo, opts.Config)
	}
	opts.Committed = func(ctx context.Context, cfg *muster.Config) map[string]string {
		repo, err := cmdutil.OpenRepo(ctx, opts.Repo)
		if err != nil {
			return nil
		}
		return preflight.CommittedCommands(ctx, repo.Top, cfg)
	}
	opts.Toolchains = func(ctx context.Context) []string {
		repo, err := cmdutil.OpenRepo(ctx, opts.Repo)
		if err != nil {
			return nil
		}
		return doctor.ToolchainWarnings(repo.Top, func(p string, args ...string) (string, error) {
			out, err := exec.CommandContext(ctx, p, args...).Output()
			return string(out), err
		})
	}
	return doctor.NewCmdOpts(opts)
}

// repoConfig returns the configuration of the repository at dir ("" for
// the current directory's; config "" for its muster.toml), or nil
// outside a repository. A --repo that is no repository, or a --config
// that does not exist, is an error.
func repoConfig(dir, config string) (*muster.Config, error) {
	repo, err := cmdutil.OpenRepo(context.Background(), dir)
	if err != nil {
		if dir != "" || config != "" {
			return nil, err
		}
		return nil, nil
	}
	return preflight.LoadConfig(repo, &preflight.Flags{Repo: dir, Config: config})
}

// Main runs muster with the process's arguments and returns the exit
// status. The first SIGINT or SIGTERM cancels the run (agents get SIGTERM,
// then SIGKILL after the grace period); a second one exits at once.
func Main() int {
	// muster's own re-exec that confines an agent or a gate and becomes
	// it: before anything else. cmd/muster runs it earlier still, from
	// a package initialiser (cmd/muster/internal/confinestart); this is
	// for the binaries that link the command tree without it (tests).
	if len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		return confine.Main(os.Args[2:], os.Stderr)
	}
	// git's GIT_ASKPASS during muster pr's push: the token, from the
	// push's environment.
	if pr.AskPass(os.Args, os.Getenv, os.Stdout) {
		return 0
	}
	// Orphans of agents (daemons whose parent exited) become muster's
	// children, not init's: they stay in muster's tree until it stops
	// them at the end of their attempt.
	_ = proc.BecomeSubreaper()
	io := cmdutil.System()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// A dead reader of stdout or stderr (muster run | tee, and Ctrl-C
	// ends tee too) must not kill muster mid-stop with SIGPIPE, leaving
	// its agents running and no RunInterrupted: caught (not ignored, so
	// agents and gates still get the default SIGPIPE), a write to the
	// dead pipe fails with EPIPE instead, and the run goes on or stops
	// cleanly. See issue 13.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	// A first signal cancels, a second exits. It lives as long as the
	// process: signal.Stop does not close sigs, and main exits as soon as
	// Main returns.
	go func() {
		n := 0
		for range sigs {
			n++
			if n == 1 {
				fmt.Fprintln(io.ErrOut, "\nstopping: agents get SIGTERM, then SIGKILL after the grace period (again to quit at once)")
				cancel(muster.ErrInterrupted)
				continue
			}
			os.Exit(cmdutil.ExitInterrupted)
		}
	}()
	return Execute(ctx, io, os.Args[1:])
}

// Execute runs one command line and returns its exit status.
func Execute(ctx context.Context, io *cmdutil.IOStreams, args []string) int {
	return execute(ctx, io, NewRoot(io), args)
}

func execute(ctx context.Context, io *cmdutil.IOStreams, root *cobra.Command, args []string) (code int) {
	// A bug must not exit 2 (a Go panic's status), which means bad input:
	// it is an internal error, 3.
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(io.ErrOut, "muster: internal error: %v\n%s", r, debug.Stack())
			code = cmdutil.ExitEnvironment
		}
	}()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	if errors.Is(context.Cause(ctx), muster.ErrInterrupted) && cmdutil.ExitCode(err) == cmdutil.ExitEnvironment {
		// A signal that came while the command was still setting up (a git
		// command it cut short, say) is an interruption, not a broken
		// environment: 130.
		fmt.Fprintln(io.ErrOut, "muster: interrupted before the run started: "+errText(err))
		return cmdutil.ExitInterrupted
	}
	if closedStream(io, err) {
		// muster report | head: the reader has what it wanted. Quiet,
		// with the status a shell gives a program SIGPIPE ended.
		return cmdutil.ExitBrokenPipe
	}
	var silent *cmdutil.Silent
	if !errors.As(err, &silent) {
		fmt.Fprintln(io.ErrOut, errLines(err))
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra's own check of the root's arguments: bad input.
		return cmdutil.ExitInvalid
	}
	return cmdutil.ExitCode(err)
}

// closedStream reports whether err is a write to the command's own
// standard output or error whose reader went away (EPIPE), whatever
// command printed it: the one place that ends such a command quietly.
func closedStream(io *cmdutil.IOStreams, err error) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(pe.Err, syscall.EPIPE) {
		return false
	}
	for _, w := range []any{io.Out, io.ErrOut} {
		if f, ok := w.(*os.File); ok && f.Name() == pe.Path {
			return true
		}
	}
	return false
}

// errLines is the text of a failed command's error: "muster: " and the
// error, but problems found in a file (a config's, FILE:LINE: message)
// are one a line as they are, as a plan's are printed.
func errLines(err error) string {
	var ps muster.Problems
	if errors.As(err, &ps) && err.Error() == ps.Error() {
		return errText(err)
	}
	return "muster: " + errText(err)
}

// errText is an error as a person reads it: redacted (internal/redact) of
// the secrets of muster's environment, key-shaped strings and URL
// user-info, wherever in muster or git the error came from.
func errText(err error) string {
	return redact.New(redact.Environ(os.Environ())...).String(err.Error())
}

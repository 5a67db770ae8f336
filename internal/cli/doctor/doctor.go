// Package doctor is the `muster doctor` command: which agents are
// installed, their versions, whether credentials are present (never
// printed) and how each authority is enforced. It exits 1 when a
// configured executor cannot run.
package doctor

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/doctor"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/proc"
)

// Options are the command's inputs.
type Options struct {
	JSON bool
	// Repo and Config are --repo DIR and --config FILE, as every command
	// takes them (ARCHITECTURE §2.1): "" for the current directory's
	// repository and its muster.toml. LoadConfig, Committed and
	// Toolchains read them.
	Repo, Config string
	LoadConfig   func() (*muster.Config, error)
	Check        doctor.Options
	// Committed, when set, returns by executor name why a program given
	// as a relative path would not start in a task's worktree (it is
	// resolved in the committed tree, not the work tree).
	Committed func(ctx context.Context, cfg *muster.Config) map[string]string
	// Probe tells what kernel confinement this system offers (nil:
	// confine.Probe).
	Probe func() confine.Status
	// Namespaces tells why the sandbox's namespaces cannot be built here
	// ("" when they can; nil: confine.ProbeNamespaces of muster's own
	// executable).
	Namespaces func() string
	// Toolchains, when set, returns where the installed toolchain misses
	// what the repository asks (ToolchainWarnings).
	Toolchains func(ctx context.Context) []string
}

// NewCmd returns the `doctor` command. loadConfig returns the repository's
// configuration (nil when there is none).
func NewCmd(loadConfig func() (*muster.Config, error)) *cobra.Command {
	return NewCmdOpts(&Options{LoadConfig: loadConfig})
}

// NewCmdOpts returns the `doctor` command with its inputs set.
func NewCmdOpts(opts *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check which agents are installed, their versions and credentials, and confinement",
		Long: `Check, for each configured executor and each known agent CLI, whether its
program is found (on PATH, in the executor's command, or in .cache/agents),
its version, whether its credentials are present (never printed: only "set",
"login" or "missing"), and whether each authority (read, write, shell) is
enforced by the agent or only advisory; then whether the kernel can confine
agents and gates (Landlock, the sandbox's namespaces, the capability drop),
and a warning when muster runs as root. A program given as a relative path (command =
["./agent.sh"]) must be committed: it is resolved in each task's worktree, a
clone of the committed tree. Exits 1 when a configured executor cannot run,
or when [run] confine = "required" and any layer is missing.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Run(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the results as JSON")
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "the repository whose config to check (default: the current directory's)")
	cmd.Flags().StringVar(&opts.Config, "config", "", "the config file (default: muster.toml at the repository root)")
	return cmd
}

// Run checks and prints; a configured executor that cannot run makes it
// return a *muster.Error with CodeFailed.
func Run(ctx context.Context, opts *Options, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var cfg *muster.Config
	if opts.LoadConfig != nil {
		c, err := opts.LoadConfig()
		if err != nil {
			return err
		}
		cfg = c
	}
	results := doctor.Check(ctx, cfg, opts.Check)
	if opts.Committed != nil && cfg != nil {
		probs := opts.Committed(ctx, cfg)
		for i := range results {
			if p, ok := probs[results[i].Executor]; ok && results[i].Executor != "" {
				results[i].Problems = append(results[i].Problems, p)
			}
		}
	}
	var err error
	if opts.JSON {
		err = doctor.WriteJSON(out, results)
	} else {
		err = doctor.WriteText(out, results)
	}
	if err != nil {
		return &muster.Error{Code: muster.CodeInternal, Op: "doctor", Err: err}
	}
	probe := opts.Probe
	if probe == nil {
		probe = confine.Probe
	}
	st := probe()
	mode := muster.ConfineAuto
	if cfg != nil && cfg.Run.Confine != "" {
		mode = cfg.Run.Confine
	}
	ns := ""
	if st.Available() && mode != muster.ConfineOff {
		ns = namespacesReason(opts)
	}
	if !opts.JSON {
		writeConfinement(ctx, out, opts, cfg, st, mode, ns)
	}
	if mode == muster.ConfineRequired && !st.Available() {
		return &muster.Error{Code: muster.CodeFailed, Op: "doctor",
			Message: `[run] confine = "required", but this system cannot confine agents: ` + st.Reason}
	}
	if mode == muster.ConfineRequired && ns != "" {
		return &muster.Error{Code: muster.CodeFailed, Op: "doctor",
			Message: `[run] confine = "required", but this system cannot build the sandbox's namespaces: ` + ns}
	}
	if cfg != nil && mode == muster.ConfineRequired {
		if ok, why := proc.ProbeCgroups().Can(cfg.Run.MaxPids, cfg.Run.MaxMemory); !ok {
			return &muster.Error{Code: muster.CodeFailed, Op: "doctor",
				Message: `[run] confine = "required" with max_pids or max_memory set, but ` + why}
		}
	}
	if failed := doctor.Failed(results); len(failed) > 0 {
		return &muster.Error{Code: muster.CodeFailed, Op: "doctor",
			Message: fmt.Sprintf("configured executor(s) cannot run: %s", strings.Join(failed, ", "))}
	}
	return nil
}

// writeConfinement prints how agents and gates would be confined here:
// Landlock, the namespaces and the launcher, the network, the cgroup
// limits, and the warnings about root and the toolchains.
func writeConfinement(ctx context.Context, out io.Writer, opts *Options, cfg *muster.Config, st confine.Status, mode muster.ConfineMode, ns string) {
	fmt.Fprintln(out, "\n"+confinementLine(st, mode))
	if st.Available() && mode != muster.ConfineOff {
		fmt.Fprintln(out, namespacesLine(ns))
		if exe, err := os.Executable(); err == nil {
			launcher, warning := confine.Launcher(exe)
			fmt.Fprintln(out, launcherLine(exe, launcher, warning))
		}
	}
	fmt.Fprintln(out, networkLine(cfg, st.Available() && mode != muster.ConfineOff && ns == ""))
	fmt.Fprintln(out, cgroupLine(cfg, proc.ProbeCgroups()))
	if w := preflight.RootWarning(); w != "" {
		fmt.Fprintln(out, "warning: "+w)
	}
	if opts.Toolchains != nil {
		for _, w := range opts.Toolchains(ctx) {
			fmt.Fprintln(out, "warning: "+w)
		}
	}
}

func namespacesReason(opts *Options) string {
	if opts.Namespaces != nil {
		return opts.Namespaces()
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Sprintf("cannot find muster's own executable: %v", err)
	}
	launcher, _ := confine.Launcher(exe)
	return confine.ProbeNamespaces(launcher)
}

// launcherLine says what starts the sandboxes of the muster at exe (as
// confine.Launcher answered): the launcher installed beside muster, or
// muster itself (and why, when one is there but cannot serve).
func launcherLine(exe, launcher, warning string) string {
	switch {
	case warning != "":
		return "warning: " + warning
	case launcher != exe:
		return "sandbox launcher: " + launcher
	}
	return "sandbox launcher: muster itself (install " + confine.LauncherName + " beside it, from the same release, and each agent, gate and setup step starts a few milliseconds of CPU sooner)"
}

// cgroupLine says whether [run] max_pids and max_memory can be enforced
// here (ARCHITECTURE §8.1), and whether the config sets them.
func cgroupLine(cfg *muster.Config, c proc.Cgroups) string {
	var pids int
	var mem int64
	if cfg != nil {
		pids, mem = cfg.Run.MaxPids, cfg.Run.MaxMemory
	}
	where := "unavailable: " + c.Reason
	switch {
	case c.Pids != "" && c.Memory != "":
		where = fmt.Sprintf("cgroup v%d (pids and memory)", c.Version)
	case c.Pids != "" || c.Memory != "":
		where = fmt.Sprintf("cgroup v%d, partly: %s", c.Version, c.Reason)
	}
	set := "[run] max_pids and max_memory not set"
	if pids > 0 || mem > 0 {
		set = fmt.Sprintf("[run] max_pids %d, max_memory %d bytes (0: unset)", pids, mem)
		if ok, why := c.Can(pids, mem); !ok {
			return "warning: limits: " + where + "; " + set + ": not enforced: " + why
		}
	}
	return "limits: " + where + "; " + set
}

// namespacesLine says whether each invocation gets the sandbox's
// namespaces (reason "" when it does).
func namespacesLine(reason string) string {
	if reason == "" {
		return "namespaces: user, PID, mount, network, IPC: each invocation has its own /tmp, sees no other process, " +
			"no socket or credential of yours, and ends with everything it started; capabilities dropped"
	}
	return "namespaces: unavailable: " + reason + "; Landlock and the capability drop only (/tmp is shared, your sockets are reachable)"
}

// networkLine says what network agents get here (docs/security.md): a
// network namespace of their own, with muster's model endpoint and proxy
// on its bridge, where the sandbox's namespaces exist; else the endpoint
// and proxy on the host's loopback, which nothing forces them through.
func networkLine(cfg *muster.Config, namespaced bool) string {
	if cfg == nil {
		cfg = &muster.Config{}
	}
	pol := fmt.Sprintf("agents %s, gates %s, setup %s", cfg.AgentNetwork(nil).Policy, cfg.GateNetwork().Policy, cfg.SetupNetworkOf().Policy)
	if namespaced {
		return "network: network namespaces available: each invocation has only its own loopback and muster's model endpoint and proxy on its bridge (" +
			pol + "); agents hold a placeholder, never the key"
	}
	return "network: no network namespaces here: muster's model endpoint and proxy listen on the host's loopback (" + pol +
		"); agents hold a placeholder, never the key, but nothing stops them from connecting elsewhere themselves"
}

// confinementLine says how agents and gates would be confined here.
func confinementLine(st confine.Status, mode muster.ConfineMode) string {
	switch {
	case mode == muster.ConfineOff:
		return `confinement: off ([run] confine = "off"): agents and gates can write anywhere you can`
	case st.Available():
		return "confinement: " + st.String() + ": agents and gates may write only their clone, their home and TMPDIR, /tmp and [run] writable"
	case mode == muster.ConfineRequired:
		return `confinement: unavailable: ` + st.Reason + `; [run] confine = "required": runs refuse to start`
	}
	return "confinement: unavailable: " + st.Reason + `; agents and gates run unconfined ([run] confine = "auto")`
}

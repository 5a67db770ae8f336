// Package worker is the muster worker command: one fleet worker host.
package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/fleet"
	"github.com/muster-run/muster/gate"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/agents"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	clifleet "github.com/muster-run/muster/internal/cli/fleet"
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// NewCmd returns muster worker.
func NewCmd(io *cmdutil.IOStreams, version string) *cobra.Command {
	var url, cfgFile, name, dir string
	cmd := &cobra.Command{
		Use:   "worker --nats URL",
		Short: "Serve this host's executors to a fleet",
		Long: `Join a fleet and serve the executors of this host's config (its own agent CLIs,
credentials and clones) until SIGINT or SIGTERM; then hand back what it holds,
so that no task is lost. The config's [gates] are ignored: gates come from the
run. Clones are kept under --dir (default: muster's cache directory, fleet/).
Credentials come from the environment or [fleet] (see docs/fleet.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := clifleet.LoadConfig(cfgFile)
			if err != nil {
				return err
			}
			if url == "" {
				url = cfg.Fleet.NATS
			}
			if name == "" {
				h, err := os.Hostname()
				if err != nil {
					return cmdutil.FlagErrorf("no --name and no host name: %v", err)
				}
				name = h
			}
			if !namePattern.MatchString(name) {
				return cmdutil.FlagErrorf("--name %q: use letters, digits, '_' and '-'", name)
			}
			if dir == "" {
				c, err := os.UserCacheDir()
				if err != nil {
					return cmdutil.Env("no cache directory: set XDG_CACHE_HOME or HOME, or pass --dir")
				}
				dir = filepath.Join(c, "muster", "fleet")
			}
			if dir, err = filepath.Abs(dir); err != nil {
				return cmdutil.FlagErrorf("--dir: %v", err)
			}
			runner := gate.Runner{Grace: cfg.Grace()}
			execs := map[string]muster.Executor{}
			var specs []*muster.ExecutorSpec
			for _, s := range cfg.Executors {
				if s.Fleet {
					continue
				}
				e, err := agents.New(s)
				if err != nil {
					return &muster.Error{Code: muster.CodeInvalid, Message: err.Error()}
				}
				execs[s.Name], specs = e, append(specs, s)
			}
			conn, err := fleet.Connect(cmd.Context(), url, "muster worker "+name, fleet.AuthFrom(cfg))
			if err != nil {
				return err
			}
			defer conn.Close()
			w, err := fleet.NewWorker(fleet.WorkerOptions{
				Name: name, Version: version, Conn: conn, Specs: specs, Executors: execs,
				Gates: runner, Host: &git.Host{Root: dir}, Scratch: filepath.Join(dir, "scratch", name),
				Lease: cfg.Fleet.Lease, Log: io.ErrOut,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(io.ErrOut, "worker %s: joined the fleet at %s (clones in %s)\n", name, url, dir)
			err = w.Run(cmd.Context())
			fmt.Fprintf(io.ErrOut, "worker %s: stopped\n", name)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&url, "nats", "", "the fleet's server, nats://HOST:PORT (default: [fleet] nats)")
	fs.StringVar(&cfgFile, "config", "", "config file with the executors to serve (default: muster.toml of the repository here, if any)")
	fs.StringVar(&name, "name", "", "the worker's name (default: the host name)")
	fs.StringVar(&dir, "dir", "", "where the worker keeps its clones (default: muster's cache directory, fleet/)")
	return cmd
}

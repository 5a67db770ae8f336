// Package worker is the muster worker command: one fleet worker host.
package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/fleet"
	"github.com/muster-run/muster/gate"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/agents"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	clifleet "github.com/muster-run/muster/internal/cli/fleet"
	"github.com/muster-run/muster/internal/cli/preflight"
)

// NewCmd returns muster worker.
func NewCmd(io *cmdutil.IOStreams, version string) *cobra.Command {
	var url, cfgFile, name, dir, creds, repoDir string
	cmd := &cobra.Command{
		Use:   "worker --nats URL --creds FILE",
		Short: "Serve this host's executors to a fleet",
		Long: `Join a fleet and serve the executors of this host's config (its own agent CLIs,
credentials and clones) until SIGINT or SIGTERM; then hand back what it holds,
so that no task is lost. The config's [gates] are ignored: gates come from the
run. Clones are kept under --dir (default: muster's cache directory, fleet/).
Its agents (and gates) are confined as a local run's are ([run] confine of
its config): each may write its clone and its own directories only, and
sees neither the worker's credentials nor its other clones and cache.
Its identity is its credentials file (--creds, [fleet] creds or
$MUSTER_NATS_CREDS; muster fleet credentials issues it): the worker's name is
the credential's name, and it serves only the executors the credential names.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := clifleet.LoadConfig(cfgFile, repoDir)
			if err != nil {
				return err
			}
			if url == "" {
				url = cfg.Fleet.NATS
			}
			if err := fleet.CheckURL(url); err != nil {
				return &cmdutil.FlagError{Err: err}
			}
			auth := fleet.AuthFrom(cfg, creds)
			if auth.Creds == "" {
				return cmdutil.FlagErrorf("no credentials: pass --creds FILE (issue it with muster fleet credentials NAME --executor E -o FILE, see docs/fleet.md)")
			}
			id, err := fleet.ReadIdentity(auth.Creds)
			if err != nil {
				return err
			}
			if id.Orchestrator || !fleet.NamePattern().MatchString(id.Name) {
				return cmdutil.FlagErrorf("%s: not a worker's credentials (issue them with muster fleet credentials NAME --executor E)", auth.Creds)
			}
			if name != "" && name != id.Name {
				return cmdutil.FlagErrorf("--name %q: the worker's name is its credential's, %q", name, id.Name)
			}
			name = id.Name
			if dir == "" {
				c, err := os.UserCacheDir()
				if err != nil {
					return cmdutil.Env("no cache directory: set XDG_CACHE_HOME or HOME, or pass --dir")
				}
				dir = filepath.Join(c, "muster", "fleet")
			}
			if dir, err = filepath.Abs(dir); err != nil {
				return cmdutil.FlagErrorf("--dir: %w", err)
			}
			conf, err := confinement(cfg, dir, auth.Creds)
			if err != nil {
				return err
			}
			if conf.warning != "" {
				fmt.Fprintln(io.ErrOut, "warning: "+conf.warning)
			}
			runner := gateRunner(cfg, conf.c, dir)
			execs, specs, err := crew(cfg, id, name)
			if err != nil {
				return err
			}
			conn, err := fleet.Connect(cmd.Context(), url, "muster worker "+name, auth, false)
			if err != nil {
				return err
			}
			defer conn.Close()
			w, err := fleet.NewWorker(fleet.WorkerOptions{
				Name: name, Version: version, Conn: conn, Specs: specs, Executors: execs,
				Gates: runner, Setup: setupRunner(runner, cfg), Host: &git.Host{Root: dir, Batches: git.NewBatches()}, Scratch: filepath.Join(dir, "scratch", name),
				Lease: cfg.Fleet.Lease, Log: io.ErrOut, Confine: conf.c,
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
	fs.StringVar(&repoDir, "repo", "", "the repository whose muster.toml to read (default: the current directory's)")
	fs.StringVar(&name, "name", "", "the worker's name: must be its credential's (the default)")
	fs.StringVar(&creds, "creds", "", "the worker's credentials file (default: [fleet] creds, or $MUSTER_NATS_CREDS)")
	fs.StringVar(&dir, "dir", "", "where the worker keeps its clones (default: muster's cache directory, fleet/)")
	return cmd
}

type workerConfinement struct {
	c       *muster.Confinement
	warning string
}

// confinement is how the worker confines its agents and gates: the local
// run's confinement ([run] confine), with the worker's directory (its
// clones, object stores and scratch) and its credentials file hidden;
// an invocation's own clone and directories are bound back, and the
// object stores its clone borrows from are seen read-only.
func confinement(cfg *muster.Config, dir, creds string) (workerConfinement, error) {
	protect := []string{dir}
	if creds != "" {
		if abs, err := filepath.Abs(creds); err == nil {
			protect = append(protect, abs)
		}
	}
	c, warnings, err := preflight.Confinement(cfg, protect...)
	if err != nil {
		return workerConfinement{}, err
	}
	out := workerConfinement{c: c, warning: strings.Join(warnings, "; ")}
	if c == nil {
		return out, nil
	}
	if c.Namespaces {
		c.Hide = append(c.Hide, protect...)
		out.c = c.WithReadOnly(filepath.Join(dir, "repos"))
	} else {
		out.warning = strings.TrimPrefix(out.warning+"; the worker's credentials and clones are not hidden from its agents without namespaces", "; ")
	}
	return out, nil
}

// gateRunner runs the jobs' gates as a local run's gates run: confined,
// on the network of the worker's [gates] network (default none), each
// with a TMPDIR of its own, and (confined) with a Go build cache of
// the worker's own in its directory, which its agents, even those that
// may write the user's Go build cache, cannot write (a local run's is
// git.GatesCache).
func gateRunner(cfg *muster.Config, c *muster.Confinement, dir string) gate.Runner {
	r := gate.Runner{Grace: cfg.Grace(), Allow: cfg.Run.EnvAllow, Confine: c, TmpRoot: filepath.Join(dir, "scratch", "gates"),
		Net: egress.Open, Network: cfg.GateNetwork()}
	if c != nil {
		cache := filepath.Join(dir, "gates", "go-build")
		if os.MkdirAll(cache, 0o700) == nil {
			r.BuildCache = cache
		}
	}
	return r
}

// setupRunner is the gates' runner whose confinement may also write
// the package caches (setup writes them, agents and gates only read
// them), on the network of the worker's [setup] network.
func setupRunner(r gate.Runner, cfg *muster.Config) gate.Runner {
	r.Confine = r.Confine.With(preflight.SetupCaches(cfg)...)
	r.Network = cfg.SetupNetworkOf()
	return r
}

// crew is the worker's executors (those of its config its credentials
// name), each behind the worker's own model endpoint, as in a local run:
// the key stays in the worker's environment. A job's budget left (the
// run's, sent with it) is counted there, priced with the worker's prices.
func crew(cfg *muster.Config, id *fleet.Identity, name string) (map[string]muster.Executor, []*muster.ExecutorSpec, error) {
	prices, err := preflight.Prices(cfg)
	if err != nil {
		return nil, nil, err
	}
	execs := map[string]muster.Executor{}
	var specs []*muster.ExecutorSpec
	for _, s := range cfg.Executors {
		if s.Fleet {
			continue
		}
		if !slices.Contains(id.Executors, s.Name) {
			return nil, nil, cmdutil.FlagErrorf("executor %s: the credentials of %s do not name it (they name: %s); issue them again with --executor %s", s.Name, name, strings.Join(id.Executors, ", "), s.Name)
		}
		e, err := agents.New(s)
		if err != nil {
			return nil, nil, &muster.Error{Code: muster.CodeInvalid, Message: err.Error()}
		}
		wrapped := egress.Wrap(e, s, cfg, nil)
		if x, ok := wrapped.(*egress.Executor); ok {
			x.Price = prices.Cost
		}
		execs[s.Name], specs = wrapped, append(specs, s)
	}
	return execs, specs, nil
}

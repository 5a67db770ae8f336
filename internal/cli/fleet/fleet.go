// Package fleet is the muster fleet command: serve runs the fleet's NATS
// server, status shows its workers.
package fleet

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/config"
	"github.com/muster-run/muster/fleet"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/textsafe"
)

// NewCmd returns muster fleet.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Run a fleet: a NATS JetStream server that workers on other machines join",
		Long: `A fleet spreads a run's tasks over worker hosts (muster worker) through a NATS
JetStream server. muster fleet serve runs one; any NATS server 2.11+ with
JetStream works as well. See docs/fleet.md.`,
	}
	cmd.AddCommand(newServe(io), newStatus(io), newCredentials(io))
	return cmd
}

// LoadConfig reads an explicit config file, else muster.toml of the
// repository around repoDir (--repo; "": the current directory) if any,
// else nothing. A --repo that is not a repository is OpenRepo's error.
func LoadConfig(explicit, repoDir string) (*muster.Config, error) {
	if explicit != "" {
		return config.Load(explicit)
	}
	repo, err := cmdutil.OpenRepo(context.Background(), repoDir)
	if err != nil && repoDir != "" {
		return nil, err
	}
	if err == nil {
		if p := filepath.Join(repo.Top, config.FileName); fileExists(p) {
			return config.Load(p)
		}
	}
	return &muster.Config{}, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// DataDir is muster's data directory: $XDG_DATA_HOME/muster, else
// ~/.local/share/muster.
func DataDir() (string, error) {
	if d := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "muster"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", cmdutil.Env("no data directory: set XDG_DATA_HOME or HOME, or pass --store")
	}
	return filepath.Join(home, ".local", "share", "muster"), nil
}

func newServe(io *cmdutil.IOStreams) *cobra.Command {
	var listen, store, cfgFile, repoDir string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the fleet's NATS JetStream server in the foreground",
		Long: `Run a NATS server with JetStream in the foreground until SIGINT or SIGTERM.
The server runs NATS's decentralized authentication: on first start it creates
an operator and an account in --store (keys/, mode 0600), and admits only
clients holding credentials that account signed (muster fleet credentials).
JetStream syncs every write to disk before it acknowledges it. TLS comes from
[fleet] tls_cert and tls_key (and tls_ca to require client certificates), or
MUSTER_NATS_CERT, MUSTER_NATS_KEY and MUSTER_NATS_CA (the environment wins).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := LoadConfig(cfgFile, repoDir)
			if err != nil {
				return err
			}
			if store == "" {
				d, err := DataDir()
				if err != nil {
					return err
				}
				store = filepath.Join(d, "fleet")
			}
			if err := fleet.CheckOldEnv(); err != nil {
				return err
			}
			a := fleet.AuthFrom(cfg, "")
			srv, err := fleet.Serve(fleet.ServeOptions{Listen: listen, Store: store, TLSCert: a.Cert, TLSKey: a.Key, TLSCA: a.CA})
			if err != nil {
				return err
			}
			fmt.Fprintf(io.ErrOut, "fleet: serving NATS with JetStream at %s (store %s); stop with Ctrl-C\n", srv.URL(), store)
			fmt.Fprintf(io.ErrOut, "fleet: issue credentials with: muster fleet credentials NAME --store %s -o NAME.creds\n", store)
			<-cmd.Context().Done()
			srv.Close()
			fmt.Fprintln(io.ErrOut, "fleet: stopped")
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:4222", "HOST:PORT to listen on")
	cmd.Flags().StringVar(&store, "store", "", "JetStream's directory (default: muster's data directory, fleet/)")
	cmd.Flags().StringVar(&cfgFile, "config", "", "config file with a [fleet] table (default: muster.toml of the repository here, if any)")
	cmd.Flags().StringVar(&repoDir, "repo", "", "the repository whose muster.toml to read (default: the current directory's)")
	return cmd
}

// statusJSON is the shape of fleet status --json (ARCHITECTURE.md §2.1).
type statusJSON struct {
	Workers []workerJSON `json:"workers"`
}

type workerJSON struct {
	Name          string         `json:"name"`
	Executors     []executorJSON `json:"executors"`
	HeartbeatAgeS float64        `json:"heartbeat_age_s"`
	Version       string         `json:"version"`
}

type executorJSON struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Clones int    `json:"clones"`
	Busy   int    `json:"busy"`
}

func newStatus(io *cmdutil.IOStreams) *cobra.Command {
	var url, cfgFile, creds, repoDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "The fleet's workers, their executors and clones, and their heartbeats",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := LoadConfig(cfgFile, repoDir)
			if err != nil {
				return err
			}
			if url == "" {
				url = cfg.Fleet.NATS
			}
			conn, err := fleet.Connect(cmd.Context(), url, "muster fleet status", fleet.AuthFrom(cfg, creds), false)
			if err != nil {
				return err
			}
			defer conn.Close()
			if si, ok := conn.Info(cmd.Context()); !ok {
				fmt.Fprintln(io.ErrOut, "warning: cannot confirm that the fleet's server syncs every JetStream write (not muster fleet serve?): set jetstream { sync_interval: always } in its config (docs/fleet.md)")
			} else if !si.SyncAlways {
				fmt.Fprintln(io.ErrOut, "warning: the fleet's server does not sync every JetStream write: a power failure can lose acknowledged messages (docs/fleet.md)")
			}
			ws, err := conn.ListWorkers(cmd.Context())
			if err != nil {
				return cmdutil.Env("fleet status: %w", err)
			}
			now := time.Now()
			if asJSON {
				return cmdutil.WriteJSON(io.Out, toJSON(ws, now))
			}
			printStatus(io.Out, ws, now)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "nats", "", "the fleet's server, nats://HOST:PORT (default: [fleet] nats)")
	cmd.Flags().StringVar(&creds, "creds", "", "credentials file (default: [fleet] creds, or $MUSTER_NATS_CREDS)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&cfgFile, "config", "", "config file with a [fleet] table (default: muster.toml of the repository here, if any)")
	cmd.Flags().StringVar(&repoDir, "repo", "", "the repository whose muster.toml to read (default: the current directory's)")
	return cmd
}

func age(w fleet.WorkerInfo, now time.Time) float64 {
	a := now.Sub(w.Heartbeat).Seconds()
	if a < 0 {
		a = 0 // clocks of this host and the server's differ
	}
	return float64(int64(a*10)) / 10
}

func toJSON(ws []fleet.WorkerInfo, now time.Time) statusJSON {
	out := statusJSON{Workers: []workerJSON{}}
	for _, w := range ws {
		wj := workerJSON{Name: w.Name, Version: w.Version, HeartbeatAgeS: age(w, now), Executors: []executorJSON{}}
		for _, e := range w.Executors {
			wj.Executors = append(wj.Executors, executorJSON{Name: e.Name, Kind: string(e.Kind), Clones: e.Clones, Busy: e.Busy})
		}
		out.Workers = append(out.Workers, wj)
	}
	return out
}

func printStatus(w io.Writer, ws []fleet.WorkerInfo, now time.Time) {
	if len(ws) == 0 {
		fmt.Fprintln(w, "no workers (start one with: muster worker --nats URL --creds FILE)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tEXECUTOR\tKIND\tCLONES\tBUSY\tDOING\tHEARTBEAT\tVERSION")
	for _, wk := range ws {
		name := textsafe.Sanitize(wk.Name)
		if wk.Stopping {
			name += " (stopping)"
		}
		for _, e := range wk.Executors {
			var doing []string
			for _, d := range e.Doing {
				doing = append(doing, fmt.Sprintf("#%d %s/%s a%d r%d %s", d.Clone, d.Run, d.Task, d.Attempt, d.Round, d.Role))
			}
			if len(doing) == 0 {
				doing = []string{"-"}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%.1fs ago\t%s\n", name, textsafe.Sanitize(e.Name), textsafe.Sanitize(string(e.Kind)),
				e.Clones, e.Busy, textsafe.Sanitize(strings.Join(doing, "; ")), age(wk, now), textsafe.Sanitize(wk.Version))
		}
	}
	tw.Flush()
}

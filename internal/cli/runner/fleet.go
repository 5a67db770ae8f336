package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/fleet"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
)

var _ fleet.Local = git.Bundles{}

// fleetCrew is the fleet a run joined: its connection and the executors
// its workers serve.
type fleetCrew struct {
	conn  *fleet.Conn
	specs []*muster.ExecutorSpec
	lease time.Duration
	// trustGates: [fleet] trust_worker_gates.
	trustGates bool
}

// joinFleet connects to the fleet (--nats, else [fleet] nats) and adds
// the executors its workers serve to cfg, pooled by name; a local
// executor of the same name keeps it. Executors a journaled config
// recorded as the fleet's are dropped first: the fleet of now counts.
// It returns nil when the run has no fleet.
func joinFleet(ctx context.Context, io *cmdutil.IOStreams, cfg *muster.Config, f *preflight.Flags) (*fleetCrew, error) {
	kept := cfg.Executors[:0:0]
	for _, e := range cfg.Executors {
		if !e.Fleet {
			kept = append(kept, e)
		}
	}
	cfg.Executors = kept
	url := f.NATS
	if url == "" {
		url = cfg.Fleet.NATS
	}
	if url == "" {
		return nil, nil
	}
	if err := fleet.CheckURL(url); err != nil {
		return nil, &cmdutil.FlagError{Err: err}
	}
	conn, err := fleet.Connect(ctx, url, "muster run", fleet.AuthFrom(cfg, f.Creds), true)
	if err != nil {
		return nil, err
	}
	workers, err := conn.ListWorkers(ctx)
	if err != nil {
		conn.Close()
		return nil, cmdutil.Env("fleet at %s: %v", url, err)
	}
	fc := &fleetCrew{conn: conn, lease: fleet.Lease(workers), trustGates: cfg.Fleet.TrustWorkerGates}
	for _, s := range fleet.Crew(workers) {
		if local := cfg.Executor(s.Name); local != nil {
			fmt.Fprintf(io.ErrOut, "warning: executor %s is local and the fleet's: the local one runs it\n", s.Name)
			continue
		}
		s.Fleet = true
		cfg.Executors = append(cfg.Executors, s)
		fc.specs = append(fc.specs, s)
	}
	if len(workers) == 0 {
		fmt.Fprintf(io.ErrOut, "warning: the fleet at %s has no workers\n", url)
	}
	cfg.Fleet.NATS = url
	return fc, nil
}

// JoinFleet adds the executors the fleet's workers serve to cfg (as a
// run that joins it would), for muster validate; the returned func
// closes the connection. Without a fleet it does nothing.
func JoinFleet(ctx context.Context, io *cmdutil.IOStreams, cfg *muster.Config, f *preflight.Flags) (func(), error) {
	fc, err := joinFleet(ctx, io, cfg, f)
	if err != nil || fc == nil {
		return func() {}, err
	}
	return fc.conn.Close, nil
}

// dispatch opens the run on the fleet and returns the adapters of its
// executors.
func (fc *fleetCrew) dispatch(ctx context.Context, runID, top, base, runDir string) (*fleet.Dispatcher, map[string]muster.Executor, error) {
	root, err := git.RootCommit(ctx, top, base)
	if err != nil {
		return nil, nil, cmdutil.Env("fleet: %v", err)
	}
	d, err := fleet.Open(ctx, fc.conn, fleet.DispatchOptions{Run: runID, Repo: root, Local: git.Bundles{}, Scratch: filepath.Join(runDir, "fleet"), Lease: fc.lease, TrustGates: fc.trustGates})
	if err != nil {
		return nil, nil, cmdutil.Env("%v", err)
	}
	out := map[string]muster.Executor{}
	for _, s := range fc.specs {
		out[s.Name] = d.Executor(s)
	}
	return d, out, nil
}

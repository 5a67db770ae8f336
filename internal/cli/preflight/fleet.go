package preflight

import (
	"context"
	"fmt"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/fleet"
	"github.com/muster-run/muster/internal/cli/cmdutil"
)

// FleetCrew is the fleet a run joined: its connection and the executors
// its workers serve.
type FleetCrew struct {
	Conn  *fleet.Conn
	Specs []*muster.ExecutorSpec
	Lease time.Duration
	// TrustGates: [fleet] trust_worker_gates.
	TrustGates bool
	// Setup: the run's [setup] steps, which workers run in their clones.
	Setup []muster.SetupStep
	// RunTTL: [fleet] run_ttl.
	RunTTL time.Duration
}

// JoinFleetCrew connects to the fleet (--nats, else [fleet] nats) and adds
// the executors its workers serve to cfg, pooled by name; a local
// executor of the same name keeps it. Executors a journaled config
// recorded as the fleet's are dropped first: the fleet of now counts.
// It returns nil when the run has no fleet.
func JoinFleetCrew(ctx context.Context, io *cmdutil.IOStreams, cfg *muster.Config, f *Flags) (*FleetCrew, error) {
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
		return nil, cmdutil.Env("fleet at %s: %w", url, err)
	}
	fc := &FleetCrew{Conn: conn, Lease: fleet.Lease(workers), TrustGates: cfg.Fleet.TrustWorkerGates, Setup: cfg.Setup, RunTTL: cfg.Fleet.RunTTL}
	for _, s := range fleet.Crew(workers) {
		if local := cfg.Executor(s.Name); local != nil {
			fmt.Fprintf(io.ErrOut, "warning: executor %s is local and the fleet's: the local one runs it\n", s.Name)
			continue
		}
		s.Fleet = true
		cfg.Executors = append(cfg.Executors, s)
		fc.Specs = append(fc.Specs, s)
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
func JoinFleet(ctx context.Context, io *cmdutil.IOStreams, cfg *muster.Config, f *Flags) (func(), error) {
	fc, err := JoinFleetCrew(ctx, io, cfg, f)
	if err != nil || fc == nil {
		return func() {}, err
	}
	return fc.Conn.Close, nil
}

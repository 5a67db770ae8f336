package runner

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/driver"
	"github.com/muster-run/muster/egress"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/fleet"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
)

var _ fleet.Local = git.Bundles{}

// fleetResume is, for a resumed run, the highest fleet events-stream
// sequence its journal holds per task (nil for a new run): the resumed
// run adopts the jobs still running on workers and reads their reports
// again from there.
func (s *Session) fleetResume() map[muster.TaskID]uint64 {
	if !s.Resume {
		return nil
	}
	seen := map[muster.TaskID]uint64{}
	for _, e := range s.Events {
		if e.FleetSeq > seen[e.Task] {
			seen[e.Task] = e.FleetSeq
		}
	}
	return seen
}

// dispatch opens the run on the fleet and returns the adapters of its
// executors; seen (a resume's) is fleetResume's.
func dispatch(ctx context.Context, fc *preflight.FleetCrew, runID, top, base, runDir string, seen map[muster.TaskID]uint64, ledger *egress.Ledger) (*fleet.Dispatcher, map[string]muster.Executor, error) {
	root, err := git.RootCommit(ctx, top, base)
	if err != nil {
		return nil, nil, cmdutil.Env("fleet: %w", err)
	}
	d, err := fleet.Open(ctx, fc.Conn, fleet.DispatchOptions{Run: runID, Repo: root, Local: git.Bundles{Batches: git.NewBatches()}, Scratch: filepath.Join(runDir, "fleet"), Lease: fc.Lease, TrustGates: fc.TrustGates, Setup: fc.Setup,
		Resume: seen != nil, Seen: seen, RunTTL: fc.RunTTL, BudgetLeft: ledger.Left})
	if err != nil {
		return nil, nil, cmdutil.Env("%w", err)
	}
	out := map[string]muster.Executor{}
	for _, s := range fc.Specs {
		out[s.Name] = d.Executor(s)
	}
	return d, out, nil
}

// watchJoins follows the fleet's registrations while the run goes on and
// hands the driver each executor a worker brings that the crew does not
// have (driver.Options.Joins): a worker that joins mid-run with a new
// executor name is used. Names the crew has (local, the fleet's at the
// start, engine.CodeExecutor) are not brought again. The returned stop
// ends the watch and waits for it.
func watchJoins(ctx context.Context, errOut io.Writer, fc *preflight.FleetCrew, d *fleet.Dispatcher, cfg *muster.Config) (<-chan driver.Joined, func()) {
	known := map[string]bool{engine.CodeExecutor: true}
	for _, e := range cfg.Executors {
		known[e.Name] = true
	}
	ch := make(chan driver.Joined)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { // lives until stop
		defer close(done)
		err := fc.Conn.WatchWorkers(ctx, func(r fleet.Registration) {
			for _, s := range fleet.NewExecutors(r, known) {
				select {
				case ch <- driver.Joined{Spec: s, Worker: r.Name, Exec: d.Executor(s)}:
				case <-ctx.Done():
				}
			}
		})
		if err != nil {
			fmt.Fprintf(errOut, "warning: %v: executors that join the fleet from now on are not added to this run (resume it to add them)\n", err)
		}
	}()
	return ch, func() { cancel(); <-done }
}

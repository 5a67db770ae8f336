package runner

import (
	"context"
	"path/filepath"

	"github.com/muster-run/muster"
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
func dispatch(ctx context.Context, fc *preflight.FleetCrew, runID, top, base, runDir string, seen map[muster.TaskID]uint64) (*fleet.Dispatcher, map[string]muster.Executor, error) {
	root, err := git.RootCommit(ctx, top, base)
	if err != nil {
		return nil, nil, cmdutil.Env("fleet: %w", err)
	}
	d, err := fleet.Open(ctx, fc.Conn, fleet.DispatchOptions{Run: runID, Repo: root, Local: git.Bundles{Batches: git.NewBatches()}, Scratch: filepath.Join(runDir, "fleet"), Lease: fc.Lease, TrustGates: fc.TrustGates,
		Resume: seen != nil, Seen: seen, RunTTL: fc.RunTTL})
	if err != nil {
		return nil, nil, cmdutil.Env("%w", err)
	}
	out := map[string]muster.Executor{}
	for _, s := range fc.Specs {
		out[s.Name] = d.Executor(s)
	}
	return d, out, nil
}

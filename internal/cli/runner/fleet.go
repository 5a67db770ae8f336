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

// dispatch opens the run on the fleet and returns the adapters of its
// executors.
func dispatch(ctx context.Context, fc *preflight.FleetCrew, runID, top, base, runDir string) (*fleet.Dispatcher, map[string]muster.Executor, error) {
	root, err := git.RootCommit(ctx, top, base)
	if err != nil {
		return nil, nil, cmdutil.Env("fleet: %w", err)
	}
	d, err := fleet.Open(ctx, fc.Conn, fleet.DispatchOptions{Run: runID, Repo: root, Local: git.Bundles{}, Scratch: filepath.Join(runDir, "fleet"), Lease: fc.Lease, TrustGates: fc.TrustGates})
	if err != nil {
		return nil, nil, cmdutil.Env("%w", err)
	}
	out := map[string]muster.Executor{}
	for _, s := range fc.Specs {
		out[s.Name] = d.Executor(s)
	}
	return d, out, nil
}

package git

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Export writes the tree of dir's change against base (what Commit would
// record: tracked files only, nothing untracked or ignored the agent left
// in its clone) into dest, a fresh directory of muster's that must not
// exist yet. A reviewer works there, so no agent setting the coder left
// untracked (.claude/settings.local.json, .mcp.json, .gemini/) is loaded.
// Its cost is a checkout of every tracked file (read-tree into a
// throwaway index, then checkout-index): about one full checkout of the
// repository per review round.
func (w *Workspace) Export(ctx context.Context, dir, base, dest string) error {
	s, err := w.lookup(ctx, dir)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	snap, err := w.snapshotFor(ctx, s, base)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dest, 0o755); err != nil {
		return fmt.Errorf("export the change: %w", err)
	}
	tmp, err := os.MkdirTemp(w.integDir, "export-")
	if err != nil {
		return fmt.Errorf("export the change: %w", err)
	}
	defer os.RemoveAll(tmp)
	idx := "GIT_INDEX_FILE=" + filepath.Join(tmp, "index")
	rt := w.ig("read-tree", snap.tree)
	rt.env = append(rt.env, idx)
	if _, err := run(ctx, rt); err != nil {
		return fmt.Errorf("export the change: %w", err)
	}
	co := w.ig("checkout-index", "--all", "--force")
	co.env = append(co.env, idx, "GIT_WORK_TREE="+dest)
	co.dir = dest
	if _, err := run(ctx, co); err != nil {
		return fmt.Errorf("export the change: %w", err)
	}
	return nil
}

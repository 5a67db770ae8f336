package preflight

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
)

// CommittedCommands checks the executors whose program is a relative path
// (command = ["./agent.sh"]): every agent runs in its clone's worktree,
// which holds the committed tree (HEAD), so the program must be committed
// there, and executable. It returns, by executor name, why each one
// whose program would not start, saying where the path is resolved.
func CommittedCommands(ctx context.Context, top string, cfg *muster.Config) map[string]string {
	out := map[string]string{}
	for _, e := range cfg.Executors {
		if len(e.Command) == 0 {
			continue
		}
		prog := e.Command[0]
		if !strings.Contains(prog, "/") || filepath.IsAbs(prog) {
			continue // looked up on PATH, or absolute: the same everywhere
		}
		rel := path.Clean(filepath.ToSlash(prog))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			out[e.Name] = fmt.Sprintf("command %q is resolved in each task's worktree (a clone of the committed tree at HEAD), and it leaves the repository: use an absolute path", prog)
			continue
		}
		mode, err := git.TreeMode(ctx, top, "HEAD", rel)
		switch {
		case err != nil:
			// No commit yet, or git failed: run reports that itself.
		case mode == "":
			out[e.Name] = fmt.Sprintf("command %q is resolved in each task's worktree (a clone of the committed tree at HEAD), and %s is not committed: commit it, or use an absolute path", prog, rel)
		case mode == "100644":
			out[e.Name] = fmt.Sprintf("command %q is committed without the executable bit (mode 100644): git update-index --chmod=+x %s, then commit", prog, rel)
		}
	}
	return out
}

// CheckCommands is CommittedCommands as a bad-input error, for validate
// and run alike.
func CheckCommands(ctx context.Context, top string, cfg *muster.Config) error {
	probs := CommittedCommands(ctx, top, cfg)
	if len(probs) == 0 {
		return nil
	}
	var lines []string
	for _, e := range cfg.Executors {
		if p, ok := probs[e.Name]; ok {
			lines = append(lines, "executor "+e.Name+": "+p)
		}
	}
	return cmdutil.Invalid("%s", strings.Join(lines, "\n"))
}

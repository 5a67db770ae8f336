package usage

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster/internal/cli/cmdutil"
)

// maxHomeDepth bounds how deep under a run's scratch directory an agent
// home is looked for (scratch/<task>-<n>/home-*/.claude).
const maxHomeDepth = 4

// runHomes returns the agent homes (".claude" or ".codex" folders, by
// source) in the run directories of the repository at repo ("": the
// current directory's): where the sessions muster ran live, since each
// attempt's agent has a home of its own. None outside a repository.
func runHomes(ctx context.Context, repo, source string) []string {
	r, err := cmdutil.OpenRepo(ctx, repo)
	if err != nil {
		return nil
	}
	name := "." + source
	runs := filepath.Join(r.GitDir, "muster", "runs")
	scratches, _ := filepath.Glob(filepath.Join(runs, "*", "scratch"))
	var homes []string
	for _, s := range scratches {
		_ = filepath.WalkDir(s, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if d.Name() == name {
				homes = append(homes, p)
				return filepath.SkipDir
			}
			if rel, _ := filepath.Rel(s, p); strings.Count(rel, string(filepath.Separator)) >= maxHomeDepth {
				return filepath.SkipDir
			}
			return nil
		})
	}
	return homes
}

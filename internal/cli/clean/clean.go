// Package clean is the muster clean command: it removes the clones muster
// keeps in its cache between runs.
package clean

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/cli/cmdutil"
)

// NewCmd returns muster clean.
func NewCmd(io *cmdutil.IOStreams) *cobra.Command {
	var repoDir string
	var all, asJSON bool
	var keep int
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove the clones muster keeps in its cache for this repository (--all: every repository)",
		Long: `muster keeps each executor clone of a repository in its cache
($XDG_CACHE_HOME/muster, else ~/.cache/muster) and reuses it in the next run.
clean removes this repository's clones; --all those of every repository (a
repository that no longer exists loses its whole pool). Clones a live run
is using stay. The refs that keep the candidates of races
(refs/muster/<run>/race/) are removed. Run branches and run directories are
not touched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if keep < 0 {
				return cmdutil.FlagErrorf("--keep must be 0 or more, not %d", keep)
			}
			if err := noLinks(); err != nil {
				return err
			}
			opts := git.CleanOptions{All: all, Keep: keep}
			races := 0
			if !all {
				repo, err := cmdutil.OpenRepo(cmd.Context(), repoDir)
				if err != nil {
					return err
				}
				opts.Repo = repo.Top
				// The losers of races (refs/muster/<run>/race/...) go too.
				if races, err = git.DropRaceRefs(cmd.Context(), repo.Top); err != nil {
					return cmdutil.Env("clean: %w", err)
				}
			}
			res, err := git.Clean(cmd.Context(), opts)
			if res == nil {
				res = []git.CleanResult{}
			}
			if asJSON {
				if werr := cmdutil.WriteJSON(io.Out, res); werr != nil {
					return werr
				}
			} else {
				for _, r := range res {
					line := fmt.Sprintf("%s: removed %d clone%s (%s)", r.Repo, r.Removed, plural(r.Removed), size(r.Bytes))
					if r.Kept > 0 {
						line += fmt.Sprintf(", kept %d", r.Kept)
						if r.InUse > 0 {
							line += fmt.Sprintf(" (%d in use by a live run)", r.InUse)
						}
					}
					if r.Gone {
						line += "; the repository no longer exists"
					}
					fmt.Fprintln(io.Out, line)
				}
				if races > 0 {
					fmt.Fprintf(io.Out, "removed %d race ref%s (the candidates that lost)\n", races, plural(races))
				}
				if len(res) == 0 {
					fmt.Fprintln(io.ErrOut, "no clones in muster's cache")
				}
			}
			if err != nil {
				return cmdutil.Env("clean: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repoDir, "repo", "", "repository (default: current directory)")
	cmd.Flags().String("config", "", "config file (accepted for symmetry; clean reads no config)")
	cmd.Flags().BoolVar(&all, "all", false, "clean the clones of every repository in the cache")
	cmd.Flags().IntVar(&keep, "keep", 0, "keep this many of the most recently used clones of each repository")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array, one object per repository")
	return cmd
}

// noLinks refuses a cache whose pools (repos/<key>) or their clones
// directories are symbolic links: muster makes none there, and clean
// would follow one and delete what it points at, outside the cache.
func noLinks() error {
	root, err := git.CacheRoot()
	if err != nil {
		return cmdutil.Env("clean: %w", err)
	}
	pools, err := os.ReadDir(filepath.Join(root, "repos"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return cmdutil.Env("clean: %w", err)
	}
	for _, e := range pools {
		dir := filepath.Join(root, "repos", e.Name())
		for _, p := range []string{dir, filepath.Join(dir, "clones")} {
			if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				return cmdutil.Env("clean: %s in muster's cache is a symbolic link, which muster never makes there: "+
					"clean will not follow it (remove it, and look at what made it)", p)
			}
		}
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// size prints a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

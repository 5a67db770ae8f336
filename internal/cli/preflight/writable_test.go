package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/cli/cmdutil"
)

// Writable paths that lie inside, or hold, the repository's git
// directory or muster's cache are refused, symlinks resolved both ways
// (issue 21, item 11); a path beside them is fine.
func TestWritableRefusedInsideGitOrCache(t *testing.T) {
	tmp := t.TempDir()
	top := filepath.Join(tmp, "repo")
	gitDir := filepath.Join(top, ".git")
	cache := filepath.Join(tmp, "cache")
	t.Setenv("XDG_CACHE_HOME", cache)
	for _, d := range []string{filepath.Join(gitDir, "hooks"), filepath.Join(cache, "muster", "repos"), filepath.Join(tmp, "build")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := filepath.Join(tmp, "links")
	os.Mkdir(links, 0o755)
	os.Symlink(filepath.Join(gitDir, "hooks"), filepath.Join(links, "hooks"))
	os.Symlink(filepath.Join(cache, "muster"), filepath.Join(links, "mcache"))
	os.Symlink(tmp, filepath.Join(links, "up"))
	os.Symlink(filepath.Join(gitDir, "hooks", "not-yet"), filepath.Join(links, "dangling"))
	repo := &cmdutil.Repo{Top: top, GitDir: gitDir}
	for _, c := range []struct {
		path, want string
	}{
		{filepath.Join(gitDir, "hooks"), "lies in"},
		{filepath.Join(gitDir, "muster", "runs", "r1"), "lies in"},
		{filepath.Join(links, "hooks"), "lies in"},
		{filepath.Join(links, "hooks", "new", "deeper"), "lies in"},
		{filepath.Join(cache, "muster", "repos", "x"), "lies in"},
		{filepath.Join(links, "mcache", "repos"), "lies in"},
		{filepath.Join(links, "dangling"), "lies in"},
		{tmp, "holds"},
		{filepath.Join(links, "up"), "holds"},
		{filepath.Join(tmp, "build"), ""},
		{filepath.Join(links, "nothing-here"), ""},
	} {
		cfg := &muster.Config{Source: "m.toml", Run: muster.RunConfig{Confine: muster.ConfineAuto, Writable: []string{c.path}}}
		_, _, err := RepoConfinement(repo, cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.path, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || muster.ErrorCode(err) != muster.CodeInvalid):
			t.Errorf("%s: %v, want an error (exit 2) with %q", c.path, err, c.want)
		}
	}
	// An executor's own writable paths alike.
	cfg := &muster.Config{Source: "m.toml", Executors: []*muster.ExecutorSpec{{Name: "a", Writable: []string{filepath.Join(links, "hooks")}}}}
	if _, _, err := RepoConfinement(repo, cfg); err == nil || !strings.Contains(err.Error(), "[executors.a]") {
		t.Errorf("executor writable: %v", err)
	}
}

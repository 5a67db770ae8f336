package git

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFastStageIgnoresAsGit: staging the paths the watcher saw leaves
// out exactly what git ignores, whether git is asked (an ignore rule
// exists somewhere) or not (none can apply): the user's info/exclude, a
// tracked .gitignore below the root, an excludes file the user's config
// names, and none at all.
func TestFastStageIgnoresAsGit(t *testing.T) {
	excludes := filepath.Join(t.TempDir(), "excludes")
	if err := os.WriteFile(excludes, []byte("*.bak\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		setup func(repo string)
		files []string
		want  string
	}{
		{"nothing ignored", func(string) {}, []string{"a.secret", "out/t1.txt", "deep/er/x.tmp"},
			"A a.secret; A deep/er/x.tmp; A out/t1.txt"},
		{"info/exclude", func(repo string) { write(t, repo, ".git/info/exclude", "# mine\n*.secret\n") },
			[]string{"a.secret", "out/b.secret", "b.txt"}, "A b.txt"},
		{"a tracked .gitignore below the root", func(repo string) {
			write(t, repo, "sub/.gitignore", "*.tmp\n")
			g(t, repo, "add", "sub/.gitignore")
			g(t, repo, "commit", "-qm", "ignore")
		}, []string{"sub/x.tmp", "sub/in/y.tmp", "sub/y.txt", "z.tmp"}, "A sub/y.txt; A z.tmp"},
		{"core.excludesFile", func(repo string) { g(t, repo, "config", "core.excludesFile", excludes) },
			[]string{"z.bak", "out/q.bak", "q.txt"}, "A q.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t, nil)
			c.setup(repo)
			w := open(t, repo, "r1")
			for round := range 2 { // the second round's stage is the watcher's
				dir, base, err := w.Prepare(ctx, "a#1")
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range c.files {
					write(t, dir, f, "agent\n")
				}
				ch, err := w.Change(ctx, dir, base)
				if err != nil {
					t.Fatal(err)
				}
				if got := render(ch); got != c.want {
					t.Errorf("round %d: change %s, want %s", round, got, c.want)
				}
				// (git's full scan in the clone, without the user's config)
				if got, full := render(ch), fullChange(t, dir, base); got != full && c.name != "core.excludesFile" {
					t.Errorf("round %d: change %s, git's full scan %s", round, got, full)
				}
			}
			if w.watch && w.fastStages.Load() == 0 {
				t.Error("the watcher's stage was never used")
			}
		})
	}
}

// TestDefaultExcludesFile: git's excludes file when core.excludesFile is
// not set (xdg_config_home).
func TestDefaultExcludesFile(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"HOME=/h"}, "/h/.config/git/ignore"},
		{[]string{"HOME=/h", "XDG_CONFIG_HOME=/x"}, "/x/git/ignore"},
		{[]string{"HOME=/h", "XDG_CONFIG_HOME="}, "/h/.config/git/ignore"},
		{[]string{"HOME="}, "/.config/git/ignore"},
		{[]string{"PATH=/bin"}, ""},
	} {
		if got := defaultExcludesFile(c.env); got != c.want {
			t.Errorf("%q: %q, want %q", c.env, got, c.want)
		}
	}
}

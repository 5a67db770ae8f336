package git

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The worktree's index after Prepare is the one the agent's own git
// uses: version 4, a split index sharing its base with muster's private
// index, and exactly the tip, so that `git status` is clean and an
// agent's `git add` and `git commit` work.
func TestAgentIndexAfterPrepare(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "idx")
	for i, id := range []string{"a", "b", "c"} {
		if _, conf := task(t, w, "coder#1", id, map[string]string{
			"pkg/" + id + ".go": "package pkg\n", "README.md": strings.Repeat("x", i+1),
		}, nil); len(conf) > 0 {
			t.Fatalf("task %s: conflicts %q", id, conf)
		}
		dir, base, err := w.Prepare(ctx, "coder#1")
		if err != nil {
			t.Fatal(err)
		}
		if st := g(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
			t.Fatalf("after task %s: git status in the worktree:\n%s", id, st)
		}
		if head := g(t, dir, "rev-parse", "HEAD"); head != base {
			t.Fatalf("HEAD %s, want %s", head, base)
		}
		if staged := g(t, dir, "diff", "--cached", "--name-only", base); staged != "" {
			t.Fatalf("index differs from the tip:\n%s", staged)
		}
		gitDir := g(t, dir, "rev-parse", "--path-format=absolute", "--git-dir")
		priv := w.slots["coder#1"].gitDir
		for _, name := range []string{filepath.Join(gitDir, "index"), filepath.Join(priv, indexName)} {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < 12 || string(b[:4]) != "DIRC" || binary.BigEndian.Uint32(b[4:8]) != 4 {
				t.Errorf("%s: not an index of version 4", name)
			}
		}
		if shared, _ := filepath.Glob(filepath.Join(gitDir, "sharedindex.*")); len(shared) == 0 && i > 0 {
			t.Errorf("no shared index in %s", gitDir)
		}
	}
	// The agent's own git still works on that index.
	dir, base, err := w.Prepare(ctx, "coder#1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "pkg/d.go", "package pkg\n")
	g(t, dir, "add", "pkg/d.go")
	g(t, dir, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "agent")
	ch, err := w.Change(ctx, dir, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(ch); !strings.Contains(got, "pkg/d.go") {
		t.Errorf("change %q lacks pkg/d.go", got)
	}
}

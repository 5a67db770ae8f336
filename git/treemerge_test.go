package git

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// mergeFiles is a tree to build: path -> content; a content starting
// "->" is a symlink to the rest, one starting "!" an executable file of
// the rest.
type mergeFiles map[string]string

// mergeCommitOf commits files (a whole tree) on parent in repo without
// touching its worktree or index, and returns the commit.
func mergeCommitOf(t interface{ Fatalf(string, ...any) }, tb testing.TB, repo string, files mergeFiles, parent string) string {
	wt := tb.TempDir()
	for p, c := range files {
		full := filepath.Join(wt, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatalf("%v", err)
		}
		var err error
		switch {
		case strings.HasPrefix(c, "->"):
			err = os.Symlink(c[2:], full)
		case strings.HasPrefix(c, "!"):
			err = os.WriteFile(full, []byte(c[1:]), 0o755)
		default:
			err = os.WriteFile(full, []byte(c), 0o644)
		}
		if err != nil {
			t.Fatalf("%v", err)
		}
	}
	idx := filepath.Join(tb.TempDir(), "index")
	env := func(args ...string) string {
		a := append([]string{"--git-dir=" + filepath.Join(repo, ".git"), "--work-tree=" + wt}, args...)
		c := exec.Command("git", a...)
		c.Dir = repo
		c.Env = append(os.Environ(), "GIT_INDEX_FILE="+idx, "LC_ALL=C")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	env("add", "-A")
	tree := env("write-tree")
	return env("commit-tree", "-p", parent, "-m", "c", tree)
}

// mergeUniverse is the paths the generator draws from: nested, with
// directories that can become files ("a/b", "c").
var mergeUniverse = []string{"f1", "f2", "a/f1", "a/f2", "a/b/f1", "a/b/f2", "a/b/c/f1", "a/b/c/d/e/f1", "a/b/c/d/f2", "c/f1", "c/d/f1", "e/f1", "a.c", "a/b.c", "F1", "A/f1"}

// mutate applies random edits to a copy of files: modify, add, delete,
// rename, chmod, symlink, a directory replaced by a file.
func mutate(t *rapid.T, files mergeFiles, side string) mergeFiles {
	out := mergeFiles{}
	for p, c := range files {
		out[p] = c
	}
	for i := range rapid.IntRange(0, 4).Draw(t, side+"ops") {
		p := rapid.SampledFrom(mergeUniverse).Draw(t, side+"path")
		switch rapid.IntRange(0, 12).Draw(t, side+"op") {
		case 0, 1, 2:
			out[p] = side + "-" + p + string(rune('0'+i)) + "\n"
		case 3:
			delete(out, p)
		case 4: // rename: the content moves to another path
			if c, ok := out[p]; ok {
				delete(out, p)
				out[rapid.SampledFrom(mergeUniverse).Draw(t, side+"to")] = c
			}
		case 5: // the executable bit only (or back)
			if c, ok := strings.CutPrefix(out[p], "!"); ok {
				out[p] = c
			} else {
				out[p] = "!" + out[p]
			}
		case 6:
			out[p] = "->" + side
		case 7: // a directory becomes a file
			replaceDir(out, filepath.Dir(p), side+" file\n")
		case 10: // a file becomes a directory
			delete(out, p)
			out[p+"/in"] = side + " in\n"
		case 11: // a directory becomes a symlink
			replaceDir(out, filepath.Dir(p), "->"+side+"-link")
		default:
			out[p] = "same edit of " + p + "\n" // both sides may make it
		}
	}
	// A file where a directory is: the directory's files go.
	for p := range out {
		for q := range out {
			if strings.HasPrefix(q, p+"/") {
				delete(out, q)
			}
		}
	}
	return out
}

// TestTreeMergeIsMergeTree: whenever treeMerge answers, its tree is
// byte for byte the one `git merge-tree --write-tree` writes for the
// same merge, and git found no conflict; it answers for the common case
// (the two sides add and change files in different places).
func TestTreeMergeIsMergeTree(t *testing.T) {
	repo := newRepo(t, nil)
	w := open(t, repo, "r1")
	root := g(t, repo, "rev-parse", "HEAD")
	answered := 0
	rapid.Check(t, func(rt *rapid.T) {
		base := mutate(rt, mergeFiles{"f1": "base\n", "a/f1": "base a\n", "a/b/f1": "base ab\n", "c/f1": "base c\n"}, "b")
		bc := mergeCommitOf(rt, t, repo, base, root)
		oc := mergeCommitOf(rt, t, repo, mutate(rt, base, "o"), bc)
		tc := mergeCommitOf(rt, t, repo, mutate(rt, base, "t"), bc)
		mine := w.treeMerge(ctx, bc, oc, tc)
		if mine == "" {
			return
		}
		answered++
		out, err := gitOut(repo, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", oc, tc)
		if err != nil {
			rt.Fatalf("treeMerge answered %s where merge-tree failed: %v\n%q", mine, err, out)
		}
		if theirs := strings.TrimRight(out, "\x00\n"); theirs != mine {
			rt.Fatalf("treeMerge wrote %s, merge-tree %s", mine, theirs)
		}
		if typ := g(t, repo, "cat-file", "-t", mine); typ != "tree" {
			rt.Fatalf("%s is a %s", mine, typ)
		}
	})
	if answered == 0 {
		t.Error("treeMerge never answered")
	}
	// The common case: each side adds its own file in a directory both
	// change, and changes one of its own.
	bc := mergeCommitOf(t, t, repo, mergeFiles{"f1": "x\n", "out/a": "a\n"}, root)
	oc := mergeCommitOf(t, t, repo, mergeFiles{"f1": "x\n", "out/a": "a\n", "out/o": "o\n", "g/o": "o\n"}, bc)
	tc := mergeCommitOf(t, t, repo, mergeFiles{"f1": "y\n", "out/a": "a\n", "out/t": "t\n"}, bc)
	want := g(t, repo, "merge-tree", "--write-tree", oc, tc)
	if got := w.treeMerge(ctx, bc, oc, tc); got != want {
		t.Errorf("treeMerge = %q, merge-tree %s", got, want)
	}
	// A directory both sides add, each with files of its own.
	oc = mergeCommitOf(t, t, repo, mergeFiles{"f1": "x\n", "out/a": "a\n", "new/o": "o\n", "new/d/o": "o\n"}, bc)
	tc = mergeCommitOf(t, t, repo, mergeFiles{"f1": "x\n", "out/a": "a\n", "new/t": "t\n", "new/d/t": "t\n"}, bc)
	want = g(t, repo, "merge-tree", "--write-tree", oc, tc)
	if got := w.treeMerge(ctx, bc, oc, tc); got != want {
		t.Errorf("a directory both add: treeMerge = %q, merge-tree %s", got, want)
	}
}

// replaceDir puts content (a file, or "->target": a link) where the
// directory dir of tree is, its files gone; the root stays.
func replaceDir(tree map[string]string, dir, content string) {
	for q := range tree {
		if strings.HasPrefix(q, dir+"/") {
			delete(tree, q)
		}
	}
	if dir != "." {
		tree[dir] = content
	}
}

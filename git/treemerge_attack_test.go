package git

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rawGit runs git in repo with stdin, failing the test on error.
func rawGit(t *testing.T, repo string, stdin []byte, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir, c.Stdin = repo, bytes.NewReader(stdin)
	c.Env = append(os.Environ(), "LC_ALL=C")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// rawTree writes a tree object of entries exactly as given ({mode, name,
// oid}, in that order, duplicates kept), as an agent could into its
// object store, and returns its name.
func rawTree(t *testing.T, repo string, entries ...[3]string) string {
	t.Helper()
	var body bytes.Buffer
	for _, e := range entries {
		oid, err := hex.DecodeString(e[2])
		if err != nil {
			t.Fatal(err)
		}
		body.WriteString(e[0] + " " + e[1] + "\x00")
		body.Write(oid)
	}
	return rawGit(t, repo, body.Bytes(), "hash-object", "-t", "tree", "--literally", "-w", "--stdin")
}

// TestTreeMergeOddTrees: trees git itself would not write (modes it
// canonicalizes, entries out of order or twice, a .git entry, an entry
// whose mode names another kind of object) and the kinds of change
// treeMerge must leave to merge-tree. Whenever treeMerge answers, its
// tree is merge-tree's and merge-tree found no conflict.
func TestTreeMergeOddTrees(t *testing.T) {
	repo := newRepo(t, nil)
	w := open(t, repo, "r1")
	blob := func(s string) string { return rawGit(t, repo, []byte(s), "hash-object", "-w", "--stdin") }
	x, y, z := blob("x\n"), blob("y\n"), blob("z\n")
	sub := rawTree(t, repo, [3]string{"100644", "s", x})
	sub2 := rawTree(t, repo, [3]string{"100644", "s", y})
	gitlink := rawGit(t, repo, nil, "rev-parse", "HEAD")
	// The two sides each change the root (f and g), and one of them
	// also changes (or makes) the odd directory "a".
	root := func(f, gg string, more ...[3]string) string {
		es := [][3]string{}
		es = append(es, more...)
		es = append(es, [3]string{"100644", "f", f}, [3]string{"100644", "g", gg})
		return rawTree(t, repo, es...)
	}
	canon := rawTree(t, repo, [3]string{"100644", "m", x})
	for _, c := range []struct {
		name       string
		odd        string // the odd tree "a" one side has
		plain      string // "a" in the base and the other side
		oddIsOurs  bool
		mustAnswer bool
	}{
		{"mode 100664", rawTree(t, repo, [3]string{"100664", "m", x}), canon, true, false},
		{"mode 100664, theirs", rawTree(t, repo, [3]string{"100664", "m", x}), canon, false, false},
		{"mode 100600 on a deeper tree", rawTree(t, repo, [3]string{"40000", "d", rawTree(t, repo, [3]string{"100600", "m", x})}), canon, true, false},
		{"mode 040000 zero-padded", rawTree(t, repo, [3]string{"040000", "d", sub}), canon, true, false},
		{"entries out of order", rawTree(t, repo, [3]string{"100644", "b", x}, [3]string{"100644", "a", y}), canon, true, false},
		{"an entry twice", rawTree(t, repo, [3]string{"100644", "m", x}, [3]string{"100644", "m", y}), canon, true, false},
		{"a file and a directory of one name", rawTree(t, repo, [3]string{"100644", "m", x}, [3]string{"40000", "m", sub}), canon, true, false},
		{"a .git entry", rawTree(t, repo, [3]string{"40000", ".git", sub}), canon, true, false},
		{"a tree mode on a blob", rawTree(t, repo, [3]string{"40000", "m", x}), canon, true, false},
		{"a blob mode on a tree", rawTree(t, repo, [3]string{"100644", "m", sub}), canon, true, false},
		{"a gitlink", rawTree(t, repo, [3]string{"160000", "m", gitlink}), canon, true, true},
		{"a symlink", rawTree(t, repo, [3]string{"120000", "m", x}), canon, true, true},
		{"an empty tree", rawTree(t, repo), canon, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := root(x, x, [3]string{"40000", "a", c.plain})
			odd, plain := root(x, y, [3]string{"40000", "a", c.odd}), root(z, x, [3]string{"40000", "a", c.plain})
			if !c.oddIsOurs {
				odd, plain = root(z, x, [3]string{"40000", "a", c.odd}), root(x, y, [3]string{"40000", "a", c.plain})
			}
			bc := rawGit(t, repo, nil, "commit-tree", "-m", "b", base)
			oc := rawGit(t, repo, nil, "commit-tree", "-p", bc, "-m", "o", odd)
			tc := rawGit(t, repo, nil, "commit-tree", "-p", bc, "-m", "t", plain)
			if !c.oddIsOurs {
				oc, tc = rawGit(t, repo, nil, "commit-tree", "-p", bc, "-m", "o", plain), rawGit(t, repo, nil, "commit-tree", "-p", bc, "-m", "t", odd)
			}
			compareMergeTree(t, w, repo, bc, oc, tc, c.mustAnswer)
		})
	}
	_ = sub2
}

// compareMergeTree fails when treeMerge answers other than merge-tree.
func compareMergeTree(t *testing.T, w *Workspace, repo, bc, oc, tc string, mustAnswer bool) {
	t.Helper()
	mine := w.treeMerge(ctx, bc, oc, tc)
	out, err := gitOut(repo, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", oc, tc)
	theirs := strings.TrimRight(out, "\x00\n")
	t.Logf("treeMerge %q, merge-tree %q (err %v)", mine, theirs, err)
	switch {
	case mine == "" && mustAnswer:
		t.Errorf("treeMerge did not answer; merge-tree %s", theirs)
	case mine == "":
	case err != nil:
		t.Errorf("treeMerge answered %s where merge-tree failed: %v\n%q", mine, err, out)
	case mine != theirs:
		t.Errorf("treeMerge wrote %s, merge-tree %s\nmine:\n%s\ngit's:\n%s", mine, theirs,
			g(t, repo, "ls-tree", "-r", "-t", mine), g(t, repo, "ls-tree", "-r", "-t", theirs))
	}
}

// TestTreeMergeOddBothChanged: odd trees in a directory both sides
// change (the root), and odd trees one side changes while the other
// removes or renames a directory elsewhere (merge-ort then looks into
// more directories for renames).
func TestTreeMergeOddBothChanged(t *testing.T) {
	repo := newRepo(t, nil)
	w := open(t, repo, "r1")
	blob := func(s string) string { return rawGit(t, repo, []byte(s), "hash-object", "-w", "--stdin") }
	x, y, z := blob("x\n"), blob("y\n"), blob("z\n")
	e := func(mode, name, oid string) [3]string { return [3]string{mode, name, oid} }
	tr := func(es ...[3]string) string { return rawTree(t, repo, es...) }
	sub := tr(e("100644", "s", x))
	commit := func(tree, parent string) string {
		if parent == "" {
			return rawGit(t, repo, nil, "commit-tree", "-m", "c", tree)
		}
		return rawGit(t, repo, nil, "commit-tree", "-p", parent, "-m", "c", tree)
	}
	odd := tr(e("100664", "m", x), e("100644", "b", y), e("100644", "a", y))
	head := rawGit(t, repo, nil, "rev-parse", "HEAD")
	big := blob(strings.Repeat("a long file to be renamed\n", 40))
	for _, c := range []struct {
		name           string
		base, ours, th string
	}{
		{"root out of order", tr(e("100644", "g", x), e("100644", "f", x)),
			tr(e("100644", "g", y), e("100644", "f", x)), tr(e("100644", "g", x), e("100644", "f", z))},
		{"a dir sorted before a file that sorts first", tr(e("40000", "a", sub), e("100644", "a.c", x), e("100644", "f", x)),
			tr(e("40000", "a", sub), e("100644", "a.c", y), e("100644", "f", x)), tr(e("40000", "a", sub), e("100644", "a.c", x), e("100644", "f", z))},
		{"root with a .git entry", tr(e("40000", ".git", sub), e("100644", "f", x), e("100644", "g", x)),
			tr(e("40000", ".git", sub), e("100644", "f", y), e("100644", "g", x)), tr(e("40000", ".git", sub), e("100644", "f", x), e("100644", "g", z))},
		{"a removed directory deeper, an odd one elsewhere",
			tr(e("40000", "q", tr(e("40000", "p", tr(e("100644", "big", big))), e("100644", "k", x))), e("40000", "a", sub), e("100644", "f", x)),
			tr(e("40000", "q", tr(e("100644", "k", x))), e("40000", "a", sub), e("100644", "f", y)),
			tr(e("40000", "q", tr(e("40000", "p", tr(e("100644", "big", big))), e("100644", "k", x))), e("40000", "a", odd), e("100644", "f", x))},
		{"a renamed directory deeper, an odd one elsewhere",
			tr(e("40000", "q", tr(e("40000", "p", tr(e("100644", "big", big))), e("100644", "k", x))), e("40000", "a", sub), e("100644", "f", x)),
			tr(e("40000", "q", tr(e("40000", "r", tr(e("100644", "big", big))), e("100644", "k", x))), e("40000", "a", sub), e("100644", "f", y)),
			tr(e("40000", "q", tr(e("40000", "p", tr(e("100644", "big", big))), e("100644", "k", x))), e("40000", "a", odd), e("100644", "f", x))},
		{"a directory one side makes a gitlink, the other changes",
			tr(e("40000", "s", sub), e("100644", "f", x)), tr(e("160000", "s", head), e("100644", "f", y)), tr(e("40000", "s", tr(e("100644", "s", z))), e("100644", "f", x))},
		{"a gitlink both sides move", tr(e("160000", "s", head), e("100644", "f", x)),
			tr(e("160000", "s", x), e("100644", "f", y)), tr(e("160000", "s", y), e("100644", "f", x))},
		{"a gitlink one side moves, a file the other", tr(e("160000", "s", head), e("100644", "f", x)),
			tr(e("160000", "s", x), e("100644", "f", x), e("100644", "g", y)), tr(e("160000", "s", head), e("100644", "f", y))},
		{"a symlink one side, a file in that directory the other",
			tr(e("40000", "d", tr(e("40000", "d", tr(e("40000", "d", sub))))), e("100644", "f", x)),
			tr(e("40000", "d", tr(e("40000", "d", tr(e("120000", "d", x))))), e("100644", "f", y)),
			tr(e("40000", "d", tr(e("40000", "d", tr(e("40000", "d", tr(e("100644", "s", z))))))), e("100644", "f", x))},
		{"the executable bit one side, the content the other", tr(e("100644", "m", x), e("100644", "f", x)),
			tr(e("100755", "m", x), e("100644", "f", y)), tr(e("100644", "m", z), e("100644", "f", x))},
		{"an empty tree one side adds", tr(e("100644", "f", x), e("100644", "g", x)),
			tr(e("40000", "e", tr()), e("100644", "f", y), e("100644", "g", x)), tr(e("100644", "f", x), e("100644", "g", y))},
		{"a tree of an empty tree one side adds", tr(e("100644", "f", x), e("100644", "g", x)),
			tr(e("40000", "e", tr(e("40000", "e", tr()))), e("100644", "f", y), e("100644", "g", x)), tr(e("100644", "f", x), e("100644", "g", y))},
		{"an empty tree in a directory both add", tr(e("100644", "f", x)),
			tr(e("100644", "f", x), e("40000", "n", tr(e("40000", "e", tr()), e("100644", "o", x)))), tr(e("100644", "f", x), e("40000", "n", tr(e("100644", "t", x))))},
		{"a directory both add, one side's out of order", tr(e("100644", "f", x)),
			tr(e("100644", "f", x), e("40000", "n", tr(e("100644", "o", x), e("100644", "a", x)))), tr(e("100644", "f", x), e("40000", "n", tr(e("100644", "t", x))))},
		{"names of one case and another, odd bytes, a long name", tr(e("100644", "f", x)),
			tr(e("100644", "README", x), e("100644", "f", x), e("100644", "f\xff\n", x), e("100644", strings.Repeat("n", 5000), x)),
			tr(e("100644", "F", y), e("100644", "f", x), e("100644", "readme", y))},
		{"an empty tree one side changes", tr(e("40000", "e", sub), e("100644", "f", x), e("100644", "g", x)),
			tr(e("40000", "e", tr()), e("100644", "f", y), e("100644", "g", x)), tr(e("40000", "e", sub), e("100644", "f", x), e("100644", "g", y))},
		{"a directory both change, out of order (git loses f)", tr(e("100644", "f", x)),
			tr(e("100644", "README", x), e("100644", "f\xff\n", x), e("100644", strings.Repeat("n", 5000), x), e("100644", "f", x)),
			tr(e("100644", "readme", y), e("100644", "f", x), e("100644", "F", y))},
		{"a file and a directory of one name in a directory both change", tr(e("100644", "f", x), e("100644", "g", x), e("100644", "m", x), e("40000", "m", sub)),
			tr(e("100644", "f", y), e("100644", "g", x), e("100644", "m", x), e("40000", "m", sub)), tr(e("100644", "f", x), e("100644", "g", y), e("100644", "m", x), e("40000", "m", sub))},
		{"a renamed file deeper, into the odd one",
			tr(e("40000", "q", tr(e("100644", "big", big), e("100644", "k", x))), e("40000", "a", sub), e("100644", "f", x)),
			tr(e("40000", "q", tr(e("100644", "k", x))), e("40000", "a", sub), e("100644", "f", y)),
			tr(e("40000", "q", tr(e("100644", "big", big), e("100644", "k", x))), e("40000", "a", tr(e("100664", "m", x), e("100644", "big", big))), e("100644", "f", x))},
	} {
		t.Run(c.name, func(t *testing.T) {
			bc := commit(c.base, "")
			compareMergeTree(t, w, repo, bc, commit(c.ours, bc), commit(c.th, bc), false)
			compareMergeTree(t, w, repo, bc, commit(c.th, bc), commit(c.ours, bc), false)
		})
	}
}

// TestTreeMergeDeep: a change both sides make 300 directories down (past
// maxTreeMergeDepth) is left to merge-tree, or merged as it merges it;
// one 200 down is merged in process.
func TestTreeMergeDeep(t *testing.T) {
	repo := newRepo(t, nil)
	w := open(t, repo, "r1")
	blob := func(s string) string { return rawGit(t, repo, []byte(s), "hash-object", "-w", "--stdin") }
	x := blob("x\n")
	chain := func(depth int, bottom ...[3]string) string {
		tree := rawTree(t, repo, bottom...)
		for range depth { // (written here: a git process a level is slow)
			oid, _ := hex.DecodeString(tree)
			var err error
			if tree, err = writeLoose(filepath.Join(repo, ".git", "objects"), "sha1", "tree", append([]byte("40000 d\x00"), oid...)); err != nil {
				t.Fatal(err)
			}
		}
		return tree
	}
	for _, depth := range []int{200, 300} {
		base := chain(depth, [3]string{"100644", "x", x})
		ours := chain(depth, [3]string{"100644", "o", x}, [3]string{"100644", "x", x})
		theirs := chain(depth, [3]string{"100644", "t", x}, [3]string{"100644", "x", x})
		bc := rawGit(t, repo, nil, "commit-tree", "-m", "b", base)
		oc := rawGit(t, repo, nil, "commit-tree", "-p", bc, "-m", "o", ours)
		tc := rawGit(t, repo, nil, "commit-tree", "-p", bc, "-m", "t", theirs)
		compareMergeTree(t, w, repo, bc, oc, tc, depth < maxTreeMergeDepth)
	}
}

// TestTreeMergeRootOneSide: a tip that moved without changing the tree
// (an empty commit, a change and its revert), and the other side's root
// tree one git would not write (out of order, a mode it canonicalizes):
// merge-tree merges the root entry by entry, so writes its own tree.
func TestTreeMergeRootOneSide(t *testing.T) {
	repo := newRepo(t, nil)
	w := open(t, repo, "r1")
	blob := func(s string) string { return rawGit(t, repo, []byte(s), "hash-object", "-w", "--stdin") }
	x, y := blob("x\n"), blob("y\n")
	base := rawTree(t, repo, [3]string{"100644", "a", x}, [3]string{"100644", "f", x})
	for _, odd := range []string{
		rawTree(t, repo, [3]string{"100644", "f", y}, [3]string{"100644", "a", x}),
		rawTree(t, repo, [3]string{"100644", "a", x}, [3]string{"100644", "f", y}, [3]string{"100664", "m", x}),
	} {
		bc := rawGit(t, repo, nil, "commit-tree", "-m", "b", base)
		same := rawGit(t, repo, nil, "commit-tree", "-p", bc, "-m", "empty", base)
		oddc := rawGit(t, repo, nil, "commit-tree", "-p", bc, "-m", "odd", odd)
		compareMergeTree(t, w, repo, bc, same, oddc, false)
		compareMergeTree(t, w, repo, bc, oddc, same, false)
	}
}

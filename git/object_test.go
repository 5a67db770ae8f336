package git

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	muster "github.com/muster-run/muster"
)

// TestCommitObjectIsCommitTrees: the commit muster writes itself is, byte
// for byte, the one `git commit-tree` writes for the same tree, parent,
// message and identity; an identity or message git would rewrite goes to
// git.
func TestCommitObjectIsCommitTrees(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	w := open(t, repo, "r1")
	tip := g(t, repo, "rev-parse", "HEAD")
	tree := g(t, repo, "rev-parse", "HEAD^{tree}")
	date := []string{"GIT_COMMITTER_DATE=1700000000 +0130"}
	for _, c := range []struct {
		name, email, msg string
		plain            bool
	}{
		{"Ada Lovelace", "ada@example.com", Message(muster.CommitInfo{Run: "r1", Task: "t1", Title: "do it"}), true},
		{"Zoë Ünïcode", "z@example.com", "subject\n\nbody ✓\n", true},
		{"Trailing Dot.", "d@example.com", "m\n", false},
		{" Spaced", "s@example.com", "m\n", false},
		{"Ok", "ok@example.com", "latin1 \xe9\n", false},
		{"Ok", "ok@example.com", "nonchar \uffff\n", false},
		{"Ok", "ok@example.com", "no newline", true},
	} {
		env := append([]string{"GIT_AUTHOR_NAME=" + c.name, "GIT_AUTHOR_EMAIL=" + c.email, "GIT_AUTHOR_DATE=1690000000 -0700",
			"GIT_COMMITTER_NAME=" + c.name, "GIT_COMMITTER_EMAIL=" + c.email}, date...)
		id, err := w.writeCommitObject(tree, tip, c.msg, env)
		if err != nil {
			t.Fatal(err)
		}
		if (id != "") != c.plain {
			t.Errorf("%q %q: written here %v, want %v", c.name, c.msg, id != "", c.plain)
			continue
		}
		if id == "" {
			continue
		}
		x := exec.Command("git", "commit-tree", "-p", tip, "-F", "-", tree)
		x.Dir, x.Env, x.Stdin = repo, append(os.Environ(), env...), strings.NewReader(c.msg)
		out, err := x.Output()
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSpace(string(out)); id != want {
			t.Errorf("%q: wrote %s, commit-tree writes %s:\n%s", c.name, id, want, g(t, repo, "cat-file", "-p", id))
		}
	}
	if out, err := gitOut(repo, "fsck", "--no-dangling", "--no-progress"); err != nil {
		t.Errorf("fsck: %v\n%s", err, out)
	}
}

// TestLooseObjectSHA256: in a SHA-256 repository the object is named and
// stored as git does.
func TestLooseObjectSHA256(t *testing.T) {
	repo := t.TempDir()
	if out, err := gitOut(repo, "init", "-q", "--object-format=sha256"); err != nil {
		t.Skip("no SHA-256 repositories here:", out)
	}
	body := "hello\n"
	id, err := writeLoose(filepath.Join(repo, ".git", "objects"), "sha256", "blob", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	x := exec.Command("git", "hash-object", "--stdin")
	x.Dir, x.Stdin = repo, strings.NewReader(body)
	out, err := x.Output()
	if err != nil || strings.TrimSpace(string(out)) != id {
		t.Fatalf("wrote %s, git names it %s (%v)", id, out, err)
	}
	if got := g(t, repo, "cat-file", "-p", id); got != "hello" {
		t.Errorf("git reads %q", got)
	}
}

package git

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/muster-run/muster"
)

// randomEdit changes the worktree at dir at random: files modified
// (lines changed, added, dropped, the last newline taken away), made
// executable, added (in new directories too), deleted, made symlinks,
// made binary, a directory replacing a file.
func randomEdit(t *testing.T, r *rand.Rand, dir string, files []string) {
	t.Helper()
	text := func() string {
		var b strings.Builder
		for i := r.Intn(12); i >= 0; i-- {
			fmt.Fprintf(&b, "line %d\n", r.Intn(6))
		}
		s := b.String()
		if r.Intn(5) == 0 {
			s = strings.TrimSuffix(s, "\n")
		}
		return s
	}
	for _, f := range files {
		p := filepath.Join(dir, f)
		switch r.Intn(14) {
		case 0, 1, 2:
			write(t, dir, f, text())
		case 3:
			_ = os.Chmod(p, 0o755)
		case 4:
			_ = os.Remove(p)
		case 5:
			_ = os.Remove(p)
			_ = os.Symlink("../elsewhere/"+f, p)
		case 6:
			write(t, dir, f, "bin\x00ary "+text())
		case 7:
			_ = os.Remove(p)
			write(t, dir, f+"/inside.txt", text())
		}
	}
	for i := r.Intn(3); i > 0; i-- {
		write(t, dir, fmt.Sprintf("new%d/sub/n%d.txt", r.Intn(3), r.Intn(5)), text())
	}
}

// TestRawInProcessIsDiffTree: where no rename can be (rawInProcess takes
// it on), the raw records the object reader finds are diff-tree's byte
// for byte, and Summary's counts are those of git's patch (git diff
// --numstat); where one can, it leaves the change to git. Random changes,
// a fixed seed per round.
func TestRawInProcessIsDiffTree(t *testing.T) {
	files := []string{"a.txt", "b.txt", "d/c.txt", "d/e/f.txt", "g.sh", "h", "x/y/z.txt", "q u o t e\".txt", "ünï.txt"}
	start := map[string]string{}
	for i, f := range files {
		start[f] = fmt.Sprintf("line %d\nline 1\nline 2\n", i)
	}
	repo := newRepo(t, start)
	w := open(t, repo, "r1")
	inProcess, byGit := 0, 0
	for seed := int64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewSource(seed))
		dir, base, err := w.Prepare(ctx, "a#1")
		if err != nil {
			t.Fatal(err)
		}
		randomEdit(t, r, dir, files)
		if _, err := w.Change(ctx, dir, base); err != nil {
			t.Fatal(err)
		}
		s, _ := w.lookup(ctx, dir)
		snap := s.snap
		s.mu.Unlock()
		want := g(t, repo, "diff-tree", "-r", "-M", "-z", "--raw", base, snap.tree)
		_, _, err = w.rawInProcess(ctx, base, snap.tree, 1000)
		switch {
		case errors.Is(err, errNeedsGit):
			byGit++
			continue
		case err != nil:
			t.Fatalf("seed %d: %v", seed, err)
		}
		inProcess++
		if got := string(snap.raw); got != want+"\x00" && got != want {
			t.Errorf("seed %d: raw records\n got %q\nwant %q", seed, got, want)
		}
		sum, err := w.Summary(ctx, dir, base)
		if err != nil {
			t.Fatal(err)
		}
		if want := numstat(t, repo, base, snap.tree); !reflect.DeepEqual(sum.Files, want) {
			t.Errorf("seed %d: line counts\n got %+v\nwant %+v (git diff --numstat)", seed, sum.Files, want)
		}
	}
	t.Logf("%d changes in process, %d by git", inProcess, byGit)
	if inProcess < 5 || byGit < 5 {
		t.Errorf("%d changes in process, %d by git: the random edits do not cover both", inProcess, byGit)
	}
}

// numstat is git's count of each file's lines between two trees, with
// the paths as its patches quote them.
func numstat(t *testing.T, repo, a, b string) []muster.FileStat {
	t.Helper()
	var out []muster.FileStat
	for _, l := range strings.Split(strings.TrimSpace(g(t, repo, "diff", "--numstat", "--no-renames", a, b)), "\n") {
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			continue
		}
		fs := muster.FileStat{Path: f[2]}
		if f[0] != "-" {
			fmt.Sscan(f[0], &fs.Added)
			fmt.Sscan(f[1], &fs.Deleted)
		}
		out = append(out, fs)
	}
	return out
}

// TestLineEditsIsGit: the lines a shortest edit adds and deletes are
// git's, on random texts with lines in common and apart, and a last line
// without its newline.
func TestLineEditsIsGit(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewSource(7))
	text := func() string {
		var b strings.Builder
		for i := r.Intn(30); i > 0; i-- {
			fmt.Fprintf(&b, "%c\n", 'a'+r.Intn(5))
		}
		s := b.String()
		if r.Intn(4) == 0 {
			s = strings.TrimSuffix(s, "\n")
		}
		return s
	}
	for i := 0; i < 60; i++ {
		a, b := text(), text()
		write(t, dir, "a", a)
		write(t, dir, "b", b)
		out, _ := exec.Command("git", "diff", "--no-index", "--numstat", filepath.Join(dir, "a"), filepath.Join(dir, "b")).Output()
		var wantAdd, wantDel int
		fmt.Sscan(string(out), &wantAdd, &wantDel)
		add, del, ok := lineEdits([]byte(a), []byte(b), 1000)
		if !ok || add != wantAdd || del != wantDel {
			t.Errorf("%q -> %q: +%d -%d (%v), git +%d -%d", a, b, add, del, ok, wantAdd, wantDel)
		}
	}
	if _, _, ok := lineEdits([]byte("a\nb\nc\n"), []byte("x\ny\nz\n"), 5); ok {
		t.Error("six edits counted within a bound of five")
	}
}

// TestQuotePath: a path with a control character, a quote, a backslash
// or a byte above ASCII is quoted as git quotes it.
func TestQuotePath(t *testing.T) {
	for in, want := range map[string]string{
		"plain/a.txt":  "plain/a.txt",
		"a b.txt":      "a b.txt",
		"a\"b":         `"a\"b"`,
		"a\\b":         `"a\\b"`,
		"a\nb\x1b[31m": `"a\nb\033[31m"`,
		"ü":            `"\303\274"`,
		"\x7f":         `"\177"`,
	} {
		if got := quotePath(in); got != want {
			t.Errorf("quotePath(%q) = %s, want %s", in, got, want)
		}
	}
}

package git

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Attacks on the in-process staging (stagetree.go) and the
// reset after it (watch.go): an agent controls the clone's work tree.

// TestStageAttackNTFSGitmodulesSymlink: git's verify_path (core.protectNTFS,
// on by default everywhere) refuses a symlink whose name is an NTFS short
// name of .gitmodules ("gitmod~1", "gi7eba~1"): update-index ignores it,
// `add --all` fails, fsck calls the tree an error (gitmodulesSymlink).
// The in-process staging must not commit it either.
func TestStageAttackNTFSGitmodulesSymlink(t *testing.T) {
	for _, name := range []string{"gitmod~1", "src/GITMOD~4", "gi7eba~1", "src/Gi7EbA~9"} {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			repo := newRepo(t, baseFiles())
			w, dir, base := watched(t, repo)
			if err := os.Symlink("../README.md", filepath.Join(dir, filepath.FromSlash(name))); err != nil {
				t.Fatal(err)
			}
			write(t, dir, "src/a.go", "package a // edited\n")
			_, commit := stagedTree(t, w, repo, dir, base)
			if commit == "" {
				return
			}
			if out := g(t, repo, "ls-tree", commit, "--", name); out != "" {
				t.Errorf("committed a symlink git refuses (verify_path): %s", out)
			}
		})
	}
}

// TestStageAttackOddNamesMatchGit: names git takes as they are, however odd
// (newline, tab, NFD, invalid UTF-8, leading dash, a regular file named
// like an NTFS short name), are staged exactly as git stages them.
func TestStageAttackOddNamesMatchGit(t *testing.T) {
	names := []string{"a\nb.txt", "t\tab", "e\u0301.txt", "bad\xff\xfe.txt", "-rf", "gitmod~1", "src/gi7eba~1",
		"x/y/z/\u200c.txt", "sp ace/in", "~git", "GIT", "dir.d/a", "dir-d", "dir/a", "dir0"}
	repo := newRepo(t, baseFiles())
	w, dir, base := watched(t, repo)
	for i, n := range names {
		write(t, dir, n, fmt.Sprintf("content %d\n", i))
	}
	want := gitTree(t, dir, base)
	before := w.inProcessStages.Load()
	got, _ := stagedTree(t, w, repo, dir, base)
	if got != want {
		t.Errorf("staged tree %s, git stages %s", got, want)
	}
	if w.inProcessStages.Load() == before {
		t.Log("not staged in process")
	}
}

// TestStageAttackGitlinkUnderRemovedDir: a directory holding a tracked
// gitlink removed whole: the gitlink must go, as git's add --all drops it.
func TestStageAttackGitlinkUnderRemovedDir(t *testing.T) {
	files := baseFiles()
	files["deep/a.txt"] = "a\n"
	repo := newRepo(t, files)
	head := g(t, repo, "rev-parse", "HEAD")
	g(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+head+",deep/sub")
	g(t, repo, "commit", "-q", "-m", "gitlink")
	w, dir, base := watched(t, repo)
	if err := os.RemoveAll(filepath.Join(dir, "deep")); err != nil {
		t.Fatal(err)
	}
	want := gitTree(t, dir, base)
	got, commit := stagedTree(t, w, repo, dir, base)
	if got != want {
		t.Errorf("staged tree %s, git stages %s (%s)", got, want, g(t, repo, "ls-tree", "-r", commit))
	}
}

// TestStageAttackResetManyAndFileDir: after in-process stagings of many
// paths, some turning files into directories and back, the clone reset to
// the next tip is exactly that tip, index included (diff-files before any
// status refreshes it).
func TestStageAttackResetManyAndFileDir(t *testing.T) {
	files := baseFiles()
	files["fd/x"] = "file\n"
	files["df"] = "was a file\n"
	repo := newRepo(t, files)
	w, dir, base := watched(t, repo)
	for i := 0; i < 260; i++ {
		write(t, dir, fmt.Sprintf("many/d%d/f%d.txt", i%7, i), fmt.Sprintf("%d\n", i))
	}
	os.RemoveAll(filepath.Join(dir, "fd"))
	write(t, dir, "fd", "now a file\n")
	os.Remove(filepath.Join(dir, "df"))
	write(t, dir, "df/inner", "now a dir\n")
	want := gitTree(t, dir, base)
	got, _ := stagedTree(t, w, repo, dir, base)
	if got != want {
		t.Fatalf("staged tree %s, git stages %s", got, want)
	}
	// Task failed: the clone goes back to base.
	dir2, base2 := prepareExact(t, w, "a#1")
	// Same edits again, landed this time.
	for i := 0; i < 260; i++ {
		write(t, dir2, fmt.Sprintf("many/d%d/f%d.txt", i%7, i), fmt.Sprintf("%d\n", i))
	}
	os.RemoveAll(filepath.Join(dir2, "fd"))
	write(t, dir2, "fd", "now a file\n")
	os.Remove(filepath.Join(dir2, "df"))
	write(t, dir2, "df/inner", "now a dir\n")
	_, commit := stagedTree(t, w, repo, dir2, base2)
	land(t, w, commit, base2)
	dir3, base3 := prepareExact(t, w, "a#1")
	// And back: the tip turns fd into a directory again, df a file; a
	// second slot's task lands it while a#1 staged its own edits.
	cB, baseB := otherTask(t, w, repo, func(dir string) {
		os.Remove(filepath.Join(dir, "fd"))
		write(t, dir, "fd/y", "dir again\n")
		os.RemoveAll(filepath.Join(dir, "df"))
		write(t, dir, "df", "file again\n")
	})
	write(t, dir3, "fd2/z", "a#1's own\n")
	os.Remove(filepath.Join(dir3, "fd"))
	write(t, dir3, "fd/q", "a#1 made fd a dir too\n")
	stagedTree(t, w, repo, dir3, base3) // a#1's task fails: the tip moves under it
	land(t, w, cB, baseB)
	prepareExact(t, w, "a#1")
}

// TestStageAttackUntrackedUnderNewDirAtTip: a#1 turns the file fd into a
// directory with fd/q while b#1's task, landed first, turns fd into a
// directory with fd/y: a#1's reset to the new tip must remove fd/q.
func TestStageAttackUntrackedUnderNewDirAtTip(t *testing.T) {
	for _, changed := range []bool{true, false} {
		t.Run(fmt.Sprint("change=", changed), func(t *testing.T) {
			files := baseFiles()
			files["fd"] = "file\n"
			repo := newRepo(t, files)
			w, dirA, baseA := watched(t, repo)
			cB, baseB := otherTask(t, w, repo, func(dir string) {
				os.Remove(filepath.Join(dir, "fd"))
				write(t, dir, "fd/y", "dir\n")
			})
			os.Remove(filepath.Join(dirA, "fd"))
			write(t, dirA, "fd/q", "a's own\n")
			if changed {
				stagedTree(t, w, repo, dirA, baseA)
			}
			land(t, w, cB, baseB)
			prepareExact(t, w, "a#1")
		})
	}
}

// TestStageAttackFullResetDirOverTrackedFile: the full reset (taken here
// because a .gitignore was touched) after the agent replaced a tracked
// file with a directory holding an untracked file, the tip turning that
// path into a directory too (or keeping the file): git clean skips a
// directory whose name the index holds as a file, so the untracked file
// must still go.
func TestStageAttackFullResetDirOverTrackedFile(t *testing.T) {
	for _, tipMoves := range []bool{true, false} {
		t.Run(fmt.Sprint("tip moves=", tipMoves), func(t *testing.T) {
			files := baseFiles()
			files["fd"] = "file\n"
			repo := newRepo(t, files)
			w, dirA, _ := watched(t, repo)
			if tipMoves {
				cB, baseB := otherTask(t, w, repo, func(dir string) {
					os.Remove(filepath.Join(dir, "fd"))
					write(t, dir, "fd/y", "dir\n")
				})
				land(t, w, cB, baseB)
			}
			os.Remove(filepath.Join(dirA, "fd"))
			write(t, dirA, "fd/q", "a's own\n")
			write(t, dirA, ".gitignore", "nothing\n")
			dir, base, err := w.Prepare(ctx, "a#1")
			if err != nil {
				t.Fatal(err)
			}
			checkPrepared(t, dir, base, "")
		})
	}
}

// TestStageAttackDirBecameFileAtTipStaysFast: a tip that turned a directory
// into a file makes switchBehind's one checkout fail (the directory's
// paths match nothing in tip); the reset must still be a fast one, as
// switchTo's is (read-tree -m -u), not a full one.
func TestStageAttackDirBecameFileAtTipStaysFast(t *testing.T) {
	files := baseFiles()
	files["df/inner"] = "in a dir\n"
	repo := newRepo(t, files)
	w, dirA, baseA := watched(t, repo)
	cB, baseB := otherTask(t, w, repo, func(dir string) {
		os.RemoveAll(filepath.Join(dir, "df"))
		write(t, dir, "df", "a file\n")
	})
	write(t, dirA, "src/a.go", "package a // a's\n")
	before := w.inProcessStages.Load()
	stagedTree(t, w, repo, dirA, baseA)
	if w.inProcessStages.Load() == before {
		t.Skip("not staged in process")
	}
	land(t, w, cB, baseB)
	full := w.fullResets.Load()
	prepareExact(t, w, "a#1")
	if w.fullResets.Load() != full {
		t.Error("a full reset where switchTo's fallback does")
	}
}

// TestStageAttackInlinePathsRefuses: names git's verify_path refuses on
// some platform or for some mode go to git.
func TestStageAttackInlinePathsRefuses(t *testing.T) {
	for _, p := range []string{"gitmod~1", "a/GITMOD~2", "gi7eba~1", ".g\u200cit/config", "a/.git\ufeffmodules", "\u200d.gitattributes"} {
		if inlinePaths([]string{p}) {
			t.Errorf("inlinePaths takes %q", p)
		}
	}
	if !inlinePaths([]string{"gitmodules/x", "a/gi7eba", "é/ü"}) {
		t.Error("inlinePaths refuses plain names")
	}
}

// TestStageAttackMoreMatchGit: more changes an agent makes, each staged
// exactly as git stages it.
func TestStageAttackMoreMatchGit(t *testing.T) {
	files := baseFiles()
	files[".gitignore"] = "*.log\nbuild/\n"
	files["sub/keep.txt"] = "k\n"
	cases := []struct {
		name string
		edit func(t *testing.T, dir string)
	}{
		{"case-only rename", func(t *testing.T, dir string) {
			os.Rename(filepath.Join(dir, "README.md"), filepath.Join(dir, "readme.md"))
		}},
		{"ignored and not", func(t *testing.T, dir string) {
			write(t, dir, "x.log", "ignored\n")
			write(t, dir, "build/out.txt", "ignored\n")
			write(t, dir, "sub/y.txt", "kept\n")
		}},
		{"odd modes", func(t *testing.T, dir string) {
			write(t, dir, "m/a", "a\n")
			write(t, dir, "m/b", "b\n")
			write(t, dir, "m/c", "c\n")
			os.Chmod(filepath.Join(dir, "m/a"), 0o744)
			os.Chmod(filepath.Join(dir, "m/b"), 0o655)
			os.Chmod(filepath.Join(dir, "m/c"), 0o611)
		}},
		{"symlink to a directory, and writes through it", func(t *testing.T, dir string) {
			os.Symlink("../docs", filepath.Join(dir, "src/ln"))
			write(t, dir, "src/ln/through.txt", "via link\n")
		}},
		{"file, dir, file", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "docs/guide.txt"))
			write(t, dir, "docs/guide.txt/x", "x\n")
			os.RemoveAll(filepath.Join(dir, "docs/guide.txt"))
			write(t, dir, "docs/guide.txt", "file again\n")
		}},
		{"dir replaced by symlink", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "sub"))
			os.Symlink("src", filepath.Join(dir, "sub"))
		}},
		{"dir removed and remade empty", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "sub"))
			os.Mkdir(filepath.Join(dir, "sub"), 0o755)
		}},
		{"empty file and trailing-newline name", func(t *testing.T, dir string) {
			write(t, dir, "empty", "")
			write(t, dir, "nl\n", "x")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t, files)
			w, dir, base := watched(t, repo)
			before := w.inProcessStages.Load()
			c.edit(t, dir)
			want := gitTree(t, dir, base)
			got, commit := stagedTree(t, w, repo, dir, base)
			if got != want {
				t.Errorf("staged tree %s, git stages %s", got, want)
			}
			t.Logf("in process: %v", w.inProcessStages.Load() > before)
			if commit == "" {
				return
			}
			land(t, w, commit, base)
			prepareExact(t, w, "a#1")
		})
	}
}

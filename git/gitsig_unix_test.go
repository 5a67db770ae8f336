//go:build linux || darwin

package git

import (
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

// lstatGitSig is the record as os.Lstat sees the entries, path by path:
// what readGitSig must give.
func lstatGitSig(t *testing.T, dir string) gitDirSig {
	t.Helper()
	sig := gitDirSig{}
	var walk func(rel string)
	walk = func(rel string) {
		fi, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		ino, nlink, ctime, ok := fileID(fi)
		if !ok {
			t.Fatal("no file id")
		}
		sig[rel] = gitEntry{mode: fi.Mode(), ino: ino, nlink: nlink, size: fi.Size(), ctime: ctime}
		if !fi.IsDir() {
			return
		}
		f, err := os.Open(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		for _, n := range names {
			walk(path.Join(rel, n))
		}
	}
	walk(".git")
	return sig
}

// TestGitSigIsLstat: the descriptor walk records every entry of .git as
// os.Lstat sees it (kind and permission bits, setuid and sticky bits,
// inode, links, size, ctime), links and pipes included, never following
// a link; a .git that is a link, or one past maxGitEntries, has no
// record.
func TestGitSigIsLstat(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, ".git")
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "info"} {
		if err := os.MkdirAll(filepath.Join(g, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, mode := range map[string]os.FileMode{"HEAD": 0o644, "config": 0o600, "hooks-x": os.ModeSetuid | 0o755, "index": 0o644} {
		if err := os.WriteFile(filepath.Join(g, name), []byte(name), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(g, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(g, "refs"), os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(g, "HEAD"), filepath.Join(g, "info", "HEAD-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(g, "objects", "info", "alternates")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(g, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	got, ok := readGitSig(root)
	if want := lstatGitSig(t, dir); !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("readGitSig = %v, %v\nwant %v", got, ok, want)
	}

	for i := 0; i < maxGitEntries; i++ {
		if err := os.WriteFile(filepath.Join(g, "refs", "heads", "b"+string(rune('a'+i%26))+string(rune('a'+i/26))), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if sig, ok := readGitSig(root); ok {
		t.Fatalf("a .git of more than %d entries has a record: %d entries", maxGitEntries, len(sig))
	}

	if err := os.Rename(g, filepath.Join(dir, "real")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", g); err != nil {
		t.Fatal(err)
	}
	if sig, ok := readGitSig(root); ok {
		t.Fatalf("a .git that is a link has a record: %v", sig)
	}
}

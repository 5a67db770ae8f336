package git

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRevertRaceStaysInTheClone: without namespaces a process the agent
// left behind (env -i setsid -f escapes the invocation's family) lives on
// beside muster. While muster reverts a path outside the task's Owns
// (evil/x/junk), it swaps the clone's directory evil with a link to a
// directory of the user's, again and again (renameat2 RENAME_EXCHANGE):
// a check of the path's parents followed by a removal by path would then
// remove the user's x/junk. The revert may fail; it must never remove
// anything outside the clone. The race is run many times so it can hit.
func TestRevertRaceStaysInTheClone(t *testing.T) {
	repo := newRepo(t, baseFiles())
	w := open(t, repo, "r1")
	dir, base, _ := w.Prepare(ctx, "a#1")
	victim := filepath.Join(t.TempDir(), "user")
	precious := filepath.Join(victim, "x", "junk", "precious")
	write(t, filepath.Dir(precious), "precious", "the user's own\n")
	evil, link := filepath.Join(dir, "evil"), filepath.Join(dir, "evil.link")
	for i := 0; i < 300; i++ {
		os.RemoveAll(evil)
		os.RemoveAll(link)
		write(t, dir, "evil/x/junk", "junk\n")
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
		whileSwapped(evil, link, func() { _ = w.Revert(ctx, dir, base, []string{"evil/x/junk"}) })
		if _, err := os.Stat(precious); err != nil {
			t.Fatalf("round %d: the revert removed the user's file through the swapped link: %v", i, err)
		}
	}
}

// TestUnlinkLinkedRaceStaysInTheClone: the reset's removal of a clone's
// name of a hard-linked file (unlinkLinked), raced by a process left
// behind that swaps the file's directory with a link to a directory of
// the user's, removes nothing outside the clone (there, a file of two
// names too, as many are: muster's check of the link count passes).
func TestUnlinkLinkedRaceStaysInTheClone(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "user")
	write(t, victim, "f", "the user's own\n")
	if err := os.Link(filepath.Join(victim, "f"), filepath.Join(victim, "f2")); err != nil {
		t.Fatal(err)
	}
	d, link := filepath.Join(dir, "d"), filepath.Join(dir, "d.link")
	for i := 0; i < 300; i++ {
		os.RemoveAll(d)
		os.RemoveAll(link)
		write(t, dir, "d/f", "mine\n")
		if err := os.Link(filepath.Join(d, "f"), filepath.Join(dir, "second")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
		s := &slot{dir: dir, linked: map[string]bool{"d/f": true}, touched: map[string]bool{}}
		whileSwapped(d, link, s.unlinkLinked)
		os.Remove(filepath.Join(dir, "second"))
		if _, err := os.Stat(filepath.Join(victim, "f")); err != nil {
			t.Fatalf("round %d: the reset removed the user's file through the swapped link: %v", i, err)
		}
	}
}

// TestRemoveAllChmodRaceStaysInside: when removing a clone fails (an
// agent running as a user left a read-only directory; here, run as
// root, an immutable file stands in for it), muster makes the clone's
// directories writable and tries again. A process left behind that
// swaps one of them with a link to a directory of the user's must not
// have muster change that directory's mode.
func TestRemoveAllChmodRaceStaysInside(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file immutable")
	}
	chattr, err := osexec.LookPath("chattr")
	if err != nil {
		t.Skip("no chattr")
	}
	victim := filepath.Join(t.TempDir(), "user")
	if err := os.Mkdir(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		dir := filepath.Join(t.TempDir(), "clone")
		stuck := filepath.Join(dir, "stuck", "f")
		write(t, filepath.Dir(stuck), "f", "x")
		if out, err := osexec.Command(chattr, "+i", stuck).CombinedOutput(); err != nil {
			t.Skipf("chattr +i: %v %s", err, out)
		}
		d, link := filepath.Join(dir, "d"), filepath.Join(dir, "d.link")
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				// What muster removes is made again, and swapped.
				if _, err := os.Lstat(d); err != nil {
					_ = os.Mkdir(d, 0o755)
				}
				if _, err := os.Lstat(link); err != nil {
					_ = os.Symlink(victim, link)
				}
				_ = unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
			}
		}()
		_ = removeAll(dir)
		stop.Store(true)
		wg.Wait()
		_ = osexec.Command(chattr, "-i", stuck).Run()
		if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("round %d: the user's directory is now %v (%v)", i, fi.Mode(), err)
		}
	}
}

// whileSwapped runs f while another goroutine swaps the names a and b
// (renameat2 RENAME_EXCHANGE) over and over, as a process left behind in
// the clone would.
func whileSwapped(a, b string, f func()) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			_ = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
		}
	}()
	f()
	stop.Store(true)
	wg.Wait()
}

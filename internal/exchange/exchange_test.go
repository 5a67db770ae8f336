package exchange

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// victim is a file outside every invocation directory that an attacker
// points its links at; it must never change.
func victim(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(p, []byte("# the user's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func unchanged(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "# the user's\n" {
		t.Fatalf("%s was written through a link: %q %v", p, b, err)
	}
}

// plant puts the attack of kind at path: a symlink to victim, a relative
// symlink to a file inside the directory, a FIFO or a hard link to victim.
func plant(t *testing.T, kind, path, victim string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	switch kind {
	case "symlink":
		err = os.Symlink(victim, path)
	case "inner-symlink":
		inner := filepath.Join(filepath.Dir(path), "inner")
		if err = os.WriteFile(inner, []byte("inner"), 0o644); err == nil {
			err = os.Symlink("inner", path)
		}
	case "fifo":
		err = syscall.Mkfifo(path, 0o644)
	case "hardlink":
		err = os.Link(victim, path)
	}
	if err != nil {
		t.Fatal(err)
	}
}

var attacks = []string{"symlink", "inner-symlink", "fifo", "hardlink"}

// Every path muster reads from an invocation (plan-out, results, notes,
// transcripts: ReadFile) refuses a link, never blocks on a FIFO (the
// test would hang), and reads a hard link's content only as the regular
// file it is.
func TestReadFollowsNoLinkAndNeverBlocks(t *testing.T) {
	for _, kind := range attacks {
		t.Run(kind, func(t *testing.T) {
			v := victim(t)
			d, err := New(t.TempDir(), "inv", Options{})
			if err != nil {
				t.Fatal(err)
			}
			plant(t, kind, d.OutFile("plan-out.md"), v)
			b, err := d.ReadOut("plan-out.md", 1<<20)
			switch kind {
			case "hardlink":
				// A hard link is a regular file the invocation could read anyway.
				if err != nil {
					t.Fatal(err)
				}
			default:
				if !errors.Is(err, ErrNotRegular) || b != nil {
					t.Fatalf("read of a %s: %q, %v; want ErrNotRegular", kind, b, err)
				}
			}
			if got := Stat(d.Out, "plan-out.md"); kind != "hardlink" && got != -1 {
				t.Fatalf("Stat of a %s = %d, want -1", kind, got)
			}
		})
	}
}

func TestReadCapBeforeAByte(t *testing.T) {
	d, err := New(t.TempDir(), "inv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(d.OutFile("big"))
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file of 4 GB: refused by its size, never read.
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := d.ReadOut("big", 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if b, err := d.ReadOut("missing", 10); b != nil || err != nil {
		t.Fatalf("missing file: %q %v", b, err)
	}
	if err := os.WriteFile(d.OutFile("ok"), []byte("plan"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := d.ReadOut("ok", 10); string(b) != "plan" || err != nil {
		t.Fatalf("regular file: %q %v", b, err)
	}
	if _, err := ReadFile(d.Out, "../in/x", 10); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a path out of the root was not refused: %v", err)
	}
}

// Every path muster writes into a directory an invocation may write (a
// reused home's settings, a transcript) replaces or refuses what was
// planted there, and never writes through it.
func TestWriteFollowsNoLink(t *testing.T) {
	for _, kind := range attacks {
		t.Run(kind, func(t *testing.T) {
			v := victim(t)
			home := filepath.Join(t.TempDir(), "home")
			plant(t, kind, filepath.Join(home, ".claude", "settings.json"), v)
			if err := WriteFile(home, ".claude/settings.json", []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
			unchanged(t, v)
			st, err := os.Lstat(filepath.Join(home, ".claude", "settings.json"))
			if err != nil || !st.Mode().IsRegular() {
				t.Fatalf("settings.json is not muster's regular file: %v %v", st, err)
			}
			if b, _ := os.ReadFile(filepath.Join(home, ".claude", "settings.json")); string(b) != "{}" {
				t.Fatalf("content %q", b)
			}
			// A transcript appended to: refused when planted, never through it.
			plant(t, kind, filepath.Join(home, "transcript.jsonl"), v)
			if err := AppendFile(home, "transcript.jsonl", []byte("x\n")); err == nil {
				t.Fatalf("append through a %s was not refused", kind)
			}
			unchanged(t, v)
		})
	}
}

// A link among the directories on the way out of the home is not followed
// out of it.
func TestWriteDirectoryLinkStaysInside(t *testing.T) {
	v := victim(t)
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(v), filepath.Join(home, ".codex")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(home, ".codex/bashrc", []byte("evil"), 0o600); err == nil {
		t.Fatal("a write through a directory link out of the home was not refused")
	}
	unchanged(t, v)
}

func TestCopyFileRefusesLinkSource(t *testing.T) {
	v := victim(t)
	src := filepath.Join(t.TempDir(), "creds")
	if err := os.Symlink(v, src); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := CopyFile(home, ".claude/.credentials.json", src, 1<<20, 0o600); err == nil {
		t.Fatal("a linked source was copied")
	}
	if err := CopyFile(home, ".claude/.credentials.json", v, 1<<20, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".claude/.credentials.json")); string(b) != "# the user's\n" {
		t.Fatalf("copied %q", b)
	}
}

// New makes a fresh directory of a name no one can guess, and in/ is
// written only fresh: a file planted in in/ is not overwritten.
func TestNewIsFreshAndInIsExclusive(t *testing.T) {
	v := victim(t)
	base := t.TempDir()
	d, err := New(base, "r1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	d2, err := New(base, "r1", Options{})
	if err != nil || d2.Path == d.Path || !strings.HasPrefix(filepath.Base(d.Path), "r1-") {
		t.Fatalf("two invocations of one prefix: %v %v", d2, err)
	}
	for _, kind := range attacks {
		name := "prompt-" + kind
		plant(t, kind, d.InFile(name), v)
		if _, err := d.WriteIn(name, []byte("evil")); err == nil {
			t.Fatalf("WriteIn over a %s did not fail", kind)
		}
		unchanged(t, v)
	}
	p, err := d.WriteIn("prompt.md", []byte("hello"))
	if err != nil || p != d.InFile("prompt.md") {
		t.Fatal(p, err)
	}
	if _, err := d.WriteIn("../x", nil); err == nil {
		t.Fatal("a name with a directory was accepted")
	}
	w := strings.Join(d.Writable(), " ")
	if strings.Contains(w, d.In) || strings.Contains(" "+w+" ", " "+d.Path+" ") {
		t.Fatalf("in/ or the invocation's own directory is writable: %s", w)
	}
}

// A coder's home is shared across rounds: each round's directory names it.
func TestSharedHome(t *testing.T) {
	base := t.TempDir()
	home, err := NewHome(base, "home")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"r0", "r1"} {
		d, err := New(base, r, Options{Home: home})
		if err != nil {
			t.Fatal(err)
		}
		if d.Home != home {
			t.Fatalf("round %s home %s", r, d.Home)
		}
		if _, err := os.Stat(filepath.Join(d.Path, HomeDir)); err == nil {
			t.Fatal("a round with a shared home made its own")
		}
	}
}

// RemoveAll removes below dir only: a directory on the way that an
// invocation made a link out of dir is not followed, a link at rel is
// removed itself, and a missing path is no error.
func TestRemoveAllFollowsNoLink(t *testing.T) {
	dir, user := t.TempDir(), t.TempDir()
	keep := filepath.Join(user, "snap", "keep")
	if err := os.MkdirAll(filepath.Dir(keep), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keep, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(user, filepath.Join(dir, "via")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(user, "snap"), filepath.Join(dir, "at")); err != nil {
		t.Fatal(err)
	}
	_ = RemoveAll(dir, filepath.Join("via", "snap"))
	if err := RemoveAll(dir, "at"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("removed through a link: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "at")); err == nil {
		t.Error("the link at rel was left")
	}
	if err := RemoveAll(dir, "missing/x"); err != nil {
		t.Errorf("missing: %v", err)
	}
}

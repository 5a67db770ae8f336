package confine_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

// TestReadRootsCarveHiddenPaths: the read grants go around a hidden
// path (its siblings and its ancestors' siblings), a kept path inside a
// hidden one stays, and a hidden path inside a kept one is carved out of
// it.
func TestReadRootsCarveHiddenPaths(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	d := outsideTmp(t)
	for _, p := range []string{"home/.ssh", "home/.cache/go", "home/work", "repo/.git"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"home/.netrc", "home/notes", "repo/.git/config", "repo/.git/HEAD"} {
		if err := os.WriteFile(filepath.Join(d, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(d, "home/.ssh"), filepath.Join(d, "home/link")); err != nil {
		t.Fatal(err)
	}
	hide := []string{d + "/home", d + "/home/.ssh", d + "/repo/.git/config", "/no/such/path"}
	got := confine.ReadRoots(hide, []string{d + "/home/.cache/go", d + "/repo"})
	var under []string
	for _, r := range got {
		if strings.HasPrefix(r, d+"/") {
			under = append(under, strings.TrimPrefix(r, d+"/"))
		}
		if r == "/" || r == d || r == filepath.Dir(d) {
			t.Errorf("an ancestor of a hidden path is granted whole: %s", r)
		}
	}
	want := []string{"home/.cache/go", "repo/.git/HEAD"}
	if !reflect.DeepEqual(under, want) {
		t.Errorf("roots under the test tree %v, want %v (all: %v)", under, want, got)
	}
	// A kept directory that holds two hidden siblings loses both (the
	// carve of one must not grant the other back).
	for _, r := range confine.ReadRoots([]string{d + "/home/.ssh", d + "/home/.netrc"}, []string{d}) {
		if within(d+"/home/.ssh", r) || within(d+"/home/.netrc", r) {
			t.Errorf("a hidden path is granted through %s", r)
		}
	}
	if r := confine.ReadRoots(nil, nil); !reflect.DeepEqual(r, []string{"/"}) {
		t.Errorf("no hidden path: %v", r)
	}
}

// TestLandlockOnlyHidesPaths: without namespaces (the fallback) the hide
// list is Landlock's: a hidden file and a hidden directory cannot be
// read, also through a symlink, while their siblings and a path kept
// inside a hidden one can.
func TestLandlockOnlyHidesPaths(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	d := outsideTmp(t)
	for _, p := range []string{"home/.ssh", "home/tools"} {
		if err := os.MkdirAll(filepath.Join(d, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, body := range map[string]string{"home/.ssh/id": "SECRET-KEY", "home/.netrc": "SECRET-NETRC", "home/notes": "plain", "home/tools/t": "tool", "other": "other"} {
		if err := os.WriteFile(filepath.Join(d, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(d, "home/.ssh/id"), filepath.Join(d, "link")); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &muster.Confinement{Launcher: exe, Hide: []string{d + "/home/.ssh", d + "/home/.netrc"}, ReadOnly: []string{d + "/home/tools"}}
	args := append(c.Prefix(), "sh", "-c", `cd "$D"; for f in home/.ssh/id home/.netrc link home/notes home/tools/t other; do cat "$f" 2>/dev/null || echo "no $f"; echo; done; ls home/.ssh >/dev/null 2>&1 && echo LISTED || echo no-list`)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "D="+d, "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	s := string(out)
	if strings.Contains(s, "SECRET") || strings.Contains(s, "LISTED") {
		t.Errorf("a hidden path was read:\n%s", s)
	}
	for _, w := range []string{"no home/.ssh/id", "no home/.netrc", "no link", "plain", "tool", "other", "no-list"} {
		if !strings.Contains(s, w) {
			t.Errorf("missing %q in:\n%s", w, s)
		}
	}
}

func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}

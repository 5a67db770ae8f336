package confine_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

// TestMain lets the test binary act as muster's confining launcher, as
// the real binary does: `confine.test __confine ... -- PROGRAM`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		os.Exit(confine.Main(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 2 && os.Args[1] == "keyprobe" {
		os.Exit(keyProbe(os.Args[2]))
	}
	if len(os.Args) > 3 && os.Args[1] == "orphanparent" {
		os.Exit(orphanParent(os.Args[2], os.Args[3]))
	}
	if len(os.Args) > 2 && os.Args[1] == "unixprobe" {
		os.Exit(unixProbe(os.Args[2]))
	}
	if len(os.Args) > 2 && os.Args[1] == "firstthread" {
		os.Exit(firstThread(os.Args[2]))
	}
	os.Exit(m.Run())
}

func TestParse(t *testing.T) {
	t.Parallel()
	w, argv, err := confine.Parse([]string{"--write", "/a", "--write=/b", "--", "sh", "-c", "--write"})
	if err != nil || !reflect.DeepEqual(w, []string{"/a", "/b"}) || !reflect.DeepEqual(argv, []string{"sh", "-c", "--write"}) {
		t.Errorf("got %q %q %v", w, argv, err)
	}
	for _, bad := range [][]string{nil, {"--write"}, {"--"}, {"-x", "--", "sh"}, {"--write", "/a"}} {
		if _, _, err := confine.Parse(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestPrefixRoundTrip: what the launcher side writes, Parse reads back.
func TestPrefixRoundTrip(t *testing.T) {
	t.Parallel()
	c := (&muster.Confinement{Launcher: "/bin/muster", Writable: []string{"/w 1"}}).With("", "/w2")
	args := append(c.Prefix(), "prog", "arg")
	if args[0] != "/bin/muster" || args[1] != muster.ConfineCommand {
		t.Fatalf("prefix %q", args)
	}
	w, argv, err := confine.Parse(args[2:])
	if err != nil || !reflect.DeepEqual(w, []string{"/w 1", "/w2"}) || !reflect.DeepEqual(argv, []string{"prog", "arg"}) {
		t.Errorf("got %q %q %v", w, argv, err)
	}
	if (*muster.Confinement)(nil).Prefix() != nil || (*muster.Confinement)(nil).With("/x") != nil {
		t.Error("nil confinement is not nil")
	}
}

func needLandlock(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is Linux-only")
	}
	if st := confine.Probe(); !st.Available() {
		t.Skip(st.Reason)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
}

// confined runs script under sh, confined to writable, and returns its
// combined output and exit status.
func confined(t *testing.T, script string, env []string, writable ...string) (string, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &muster.Confinement{Launcher: exe, Writable: writable}
	args := append(c.Prefix(), "sh", "-c", script)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(append(os.Environ(), "LC_ALL=C"), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestWritesOutsideFail(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	root := outsideTmp(t)
	clone := filepath.Join(root, "clone")
	other := filepath.Join(root, "other")
	for _, d := range []string{clone, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "kept"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := confined(t, `
		set -u
		echo in > "$IN/in.txt" && echo ok-in
		mkdir "$IN/sub" && mv "$IN/in.txt" "$IN/sub/moved" && echo ok-mv
		echo tmp > "$(mktemp)" && echo ok-tmp
		echo null > /dev/null && echo ok-null
		echo out > "$OUT/out.txt" || echo denied-create
		echo x >> "$OUT/kept" || echo denied-append
		rm -f "$OUT/kept" || echo denied-rm
		mkdir "$OUT/d" || echo denied-mkdir
		ln "$IN/sub/moved" "$OUT/hl" || echo denied-link
		kill -0 $PPID || echo denied-signal
	`, []string{"IN=" + clone, "OUT=" + other}, clone, "/tmp")
	_ = code
	for _, want := range []string{"ok-in", "ok-mv", "ok-tmp", "ok-null", "denied-create", "denied-append", "denied-rm", "denied-mkdir", "denied-link", "denied-signal"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "Permission denied") {
		t.Errorf("no EACCES in:\n%s", out)
	}
	for _, p := range []string{"out.txt", "d", "hl"} {
		if _, err := os.Lstat(filepath.Join(other, p)); err == nil {
			t.Errorf("%s appeared outside the writable paths", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(other, "kept")); string(b) != "mine\n" {
		t.Errorf("kept file is %q", b)
	}
	if _, err := os.Stat(filepath.Join(clone, "sub", "moved")); err != nil {
		t.Errorf("write inside: %v", err)
	}
}

// outsideTmp returns a new directory that is not under /tmp, which tests
// make writable for confined processes.
func outsideTmp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "muster-confine-test-")
	if err != nil {
		t.Skipf("need a directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestMissingProgram(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if code := confine.Main([]string{"--", "/no/such/program"}, &buf); code != 127 {
		t.Errorf("exit %d, want 127 (%s)", code, buf.String())
	}
	buf.Reset()
	if code := confine.Main([]string{"--write"}, &buf); code != 125 || !strings.Contains(buf.String(), "--write needs a value") {
		t.Errorf("exit %d: %s", code, buf.String())
	}
}

func TestNoLandlockHook(t *testing.T) {
	t.Setenv(confine.NoLandlockEnv, "1")
	if st := confine.Probe(); st.Available() || !strings.Contains(st.String(), "simulated") {
		t.Errorf("status %v", st)
	}
	var buf bytes.Buffer
	if code := confine.Main([]string{"--", "sh", "-c", "true"}, &buf); code != 125 || !strings.Contains(buf.String(), "cannot confine") {
		t.Errorf("exit %d: %s", code, buf.String())
	}
}

// TestLandlockOnlyDropsCapabilities: without the namespaces too, the
// program holds no capability (as root as well): mknod fails in its
// writable places and muster's /proc/PID/environ is not readable.
func TestLandlockOnlyDropsCapabilities(t *testing.T) {
	t.Parallel()
	needLandlock(t)
	root := outsideTmp(t)
	out, _ := confined(t, `
		mknod "$IN/null" c 1 3 2>/dev/null && echo MKNOD || echo no-mknod
		grep -E '^Cap(Eff|Prm|Amb|Inh):' /proc/self/status | awk '{print $2}' | sort -u
		cat /proc/$MUSTER_PID/environ >/dev/null 2>&1 && echo READ-ENVIRON || echo no-environ
	`, []string{"IN=" + root, "MUSTER_PID=" + strconv.Itoa(os.Getpid())}, root)
	for _, want := range []string{"no-mknod", "0000000000000000", "no-environ"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "MKNOD") || strings.Contains(out, "READ-ENVIRON") {
		t.Errorf("root's powers kept:\n%s", out)
	}
}

package crash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bin is the muster binary, built once for the package's tests.
var bin string

func TestMain(m *testing.M) {
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintln(os.Stderr, "crash tests need git")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "muster-crash-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "muster")
	// muster's clones go to a cache of the tests' own.
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	// With the sandbox launcher beside it, as installed: the sandboxes
	// these runs kill and resume are muster-confine's (other tests
	// confine with their own executable).
	build := exec.Command("go", "build", "-o", dir+"/", "./cmd/muster", "./cmd/muster-confine")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build muster: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is how one muster process ended.
type result struct {
	code   int  // exit status; -1 when killed by a signal
	killed bool // by SIGKILL
	stderr string
	stdout string
}

// runMuster runs the binary in repo with extra environment; killAfter > 0
// sends it SIGKILL after that long (kill -9 at a moment of the clock).
func runMuster(t *testing.T, repo string, env []string, killAfter time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = repo
	// The agents here record pids and markers beside the repository,
	// outside their clones: they run unconfined, as without Landlock
	// (the test-only switch; internal/cli/testdata/confine has the
	// confined runs).
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "MUSTER_TEST_NO_LANDLOCK=1"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	err := cmd.Wait()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.killed = true
		}
	default:
		t.Fatalf("muster %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("muster %v did not end in time\n%s", args, r.stderr)
	}
	return r
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// newRepo makes a repository with one commit and a muster.toml.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "config", "user.email", "crash@example.com")
	git(t, dir, "config", "user.name", "Crash Test")
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
	return dir
}

// alive reports whether pid is a live process (zombies count as gone).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

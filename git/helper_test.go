package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	muster "github.com/muster-run/muster"
)

func TestMain(m *testing.M) {
	// Never depend on the machine's git configuration.
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	if _, err := exec.LookPath("git"); err != nil {
		os.Stdout.WriteString("git not found: skipping\n")
		os.Exit(0)
	}
	// Clones go to a cache of the tests' own, never the user's.
	cache, err := os.MkdirTemp("", "muster-git-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	removeAll(cache)
	os.Exit(code)
}

// g runs git in dir and returns its trimmed output, failing the test on
// error.
func g(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if dir == "" {
		// Never the package's own directory (this repository).
		t.Fatalf("git %s: no directory", strings.Join(args, " "))
	}
	out, err := gitOut(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimRight(out, "\n")
}

func gitOut(dir string, args ...string) (string, error) {
	if dir == "" {
		return "", os.ErrInvalid
	}
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "LC_ALL=C")
	out, err := c.CombinedOutput()
	return string(out), err
}

// write creates a file (and its directories) under dir.
func write(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newRepo makes a repository with a local identity and one commit
// holding files.
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	g(t, dir, "init", "-q", "-b", "main")
	g(t, dir, "config", "user.name", "Test User")
	g(t, dir, "config", "user.email", "test@example.com")
	if files == nil {
		files = map[string]string{"README.md": "hello\n"}
	}
	for n, c := range files {
		write(t, dir, n, c)
	}
	g(t, dir, "add", "-A")
	g(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// open opens a workspace for run id in repo and closes it at the end.
func open(t testing.TB, repo, id string, keep ...string) *Workspace {
	t.Helper()
	w, err := Open(context.Background(), Options{Repo: repo, RunID: id, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	return w
}

// render shows a change as "M a.txt; R old->new" in path order.
func render(ch *muster.Change) string {
	var out []string
	for _, f := range ch.Files {
		if f.OldPath != "" {
			out = append(out, f.Status+" "+f.OldPath+"->"+f.Path)
		} else {
			out = append(out, f.Status+" "+f.Path)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func sleepMs(n int) { time.Sleep(time.Duration(n) * time.Millisecond) }

var execCommand = exec.Command

// crash drops the workspace's leases on its clones as the kernel does
// for a process that died, without closing anything else.
func crash(w *Workspace) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.slots {
		if s.cl != nil && s.cl.lease != nil {
			s.cl.lease.Close()
		}
	}
}

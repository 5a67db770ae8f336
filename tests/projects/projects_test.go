// Package projects_test runs muster on small real projects (Node with an
// npm dependency and a node --test suite, Python with pytest, Go) with
// the muster.toml muster init writes: the gates run green in muster's
// clones, and a second run installs nothing again. Tests that need a
// toolchain or the npm registry skip outside CI when it is missing, and
// fail in CI.
package projects_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/doctor"
	"github.com/muster-run/muster/internal/cli"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/initcmd"
)

// need returns the program's path, or skips (fails in CI) without it.
func need(t *testing.T, program, install string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not installed (CI must have it: %s)", program, install)
		}
		t.Skipf("%s not installed (%s)", program, install)
	}
	return p
}

// project makes a git repository holding files, committed, in an
// isolated home, git identity and muster cache.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	need(t, "git", "apt-get install git")
	home := t.TempDir()
	gitconfig := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	repo := filepath.Join(t.TempDir(), "repo")
	for name, body := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sh(t, repo, "git", "init", "-q")
	return repo
}

func sh(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command(args[0], args[1:]...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func commit(t *testing.T, repo, msg string) {
	t.Helper()
	sh(t, repo, "git", "add", "-A")
	sh(t, repo, "git", "commit", "-q", "-m", msg)
}

// muInit runs muster init (a simulated crew: no agent is asked for) and
// returns the muster.toml it wrote.
func muInit(t *testing.T, repo string) string {
	t.Helper()
	var errOut bytes.Buffer
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut}
	opts := &initcmd.Options{Repo: repo, Check: func(context.Context) []doctor.Result { return nil }}
	if err := initcmd.Run(context.Background(), io, opts); err != nil {
		t.Fatalf("muster init: %v\n%s", err, errOut.String())
	}
	b, err := os.ReadFile(filepath.Join(repo, "muster.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withExecutor replaces init's crew by a command executor running script.
// The script goes on the command line (sh -c): a file of the test's under
// /tmp, where CI's temporary directories are, is in no invocation's
// private /tmp.
func withExecutor(t *testing.T, toml, script string) string {
	t.Helper()
	exec := regexp.MustCompile(`(?ms)^\[executors\.[^\n]*\n.*?\n\n`)
	return exec.ReplaceAllString(toml, "") + "\n[executors.sh]\nkind = \"command\"\nclones = 1\ncommand = [\"sh\", \"-c\", " + strconv.Quote(script) + "]\n"
}

// run runs muster run on plan (a file at the repository's top) and
// returns its exit code and events.
func run(t *testing.T, repo, plan, runID string) (int, []muster.Event, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := cli.Execute(context.Background(), io, []string{"run", filepath.Join(repo, plan), "--repo", repo, "--json", "--plain", "--run-id", runID})
	var evs []muster.Event
	for _, l := range strings.Split(out.String(), "\n") {
		var e muster.Event
		if json.Unmarshal([]byte(l), &e) == nil && e.Type != "" {
			evs = append(evs, e)
		}
	}
	return code, evs, errOut.String()
}

// gatesPassed says whether every gate that ran passed, and how many ran.
func gatesPassed(evs []muster.Event) (bool, int) {
	n := 0
	for _, e := range evs {
		if e.Type == muster.EvGateRan {
			n++
			if e.Passed == nil || !*e.Passed {
				return false, n
			}
		}
	}
	return true, n
}

// installs returns, per pooled clone holding path, the identity of the
// file there (inode and modification time): a reinstall changes it.
func installs(t *testing.T, path string) map[string]string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "muster", "repos", "*", "clones", "*", path))
	out := map[string]string{}
	for _, f := range m {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = fi.ModTime().String() + sysIno(fi)
	}
	return out
}

// The test binary is also muster's confining launcher for the gates and
// setup muster run starts here (cli.Main takes muster.ConfineCommand).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		os.Exit(cli.Main())
	}
	os.Exit(m.Run())
}

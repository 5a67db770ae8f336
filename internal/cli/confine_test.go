package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/muster-run/muster/confine"
	"github.com/muster-run/muster/internal/proc"
)

// TestConfineScripts runs the scripts in testdata/confine: attacks by
// agents and gates on what lies outside their clone, under real
// Landlock. Their work directory lies outside /tmp (in /var/tmp), since
// confined processes may write /tmp: the user's repository must not be
// in it for the attacks to mean anything.
func TestConfineScripts(t *testing.T) {
	root, err := os.MkdirTemp("/var/tmp", "muster-confine-")
	if err != nil {
		t.Skipf("need a directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	testscript.Run(t, testscript.Params{
		Dir:         "testdata/confine",
		WorkdirRoot: root,
		Setup: func(env *testscript.Env) error {
			gitconfig := filepath.Join(env.WorkDir, ".gitconfig")
			if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
				return err
			}
			env.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("NO_COLOR", "1")
			env.Setenv("CI", "true")
			home := filepath.Join(env.WorkDir, "home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				return err
			}
			env.Setenv("HOME", home)
			env.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
			// The Go build cache of this machine, for an honest agent's go
			// build in the sandbox (listed as writable by the script).
			env.Setenv("HOSTGOCACHE", hostGoCache(env.WorkDir))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "landlock" {
				return confine.Probe().Available(), nil
			}
			if cond == "cgroup" {
				ok, _ := proc.ProbeCgroups().Can(1, 1)
				return ok, nil
			}
			if cond == "userns" {
				exe, err := os.Executable()
				return err == nil && confine.ProbeNamespaces(exe) == "", nil
			}
			return false, nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"jsonget":  cmdJSONGet,
			"waitfile": cmdWaitFile,
		},
	})
}

// hostGoCache is `go env GOCACHE`, or a fresh one under dir.
func hostGoCache(dir string) string {
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); filepath.IsAbs(d) {
			return d
		}
	}
	return filepath.Join(dir, "go-build")
}

package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/muster-run/muster/internal/cli"
	"github.com/muster-run/muster/internal/cli/cmdutil"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"muster": func() {
			io := cmdutil.System()
			os.Exit(cli.Execute(context.Background(), io, os.Args[1:]))
		},
	})
}

// TestScripts runs the command-line scripts in testdata/script: each
// drives the real muster binary against real git in a temp directory.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			gitconfig := filepath.Join(env.WorkDir, ".gitconfig")
			if err := os.WriteFile(gitconfig, []byte("[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644); err != nil {
				return err
			}
			env.Setenv("GIT_CONFIG_GLOBAL", gitconfig)
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("NO_COLOR", "1")
			env.Setenv("CI", "true")
			return nil
		},
	})
}

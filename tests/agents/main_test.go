package agents_test

import (
	"os"
	"testing"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

// TestMain lets the test binary confine the agents it runs, as muster's
// own binary does: muster run (cli.Execute, in this process) starts each
// agent as `<this binary> __confine ... -- CLI`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		os.Exit(confine.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

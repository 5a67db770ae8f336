// Command muster runs a plan of coding tasks across a crew of AI coding
// agents. See muster --help.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	// muster __confine runs (and exits) in this package's initialiser,
	// before the command tree's packages are initialised.
	_ "github.com/muster-run/muster/cmd/muster/internal/confinestart"
	"github.com/muster-run/muster/internal/cli"
)

// profileEnv names a file for a CPU profile of this muster process (for
// the per-task overhead benchmark, tests/scale; go tool pprof reads it).
const profileEnv = "MUSTER_CPUPROFILE"

func main() {
	if p := os.Getenv(profileEnv); p != "" {
		f, err := os.Create(p)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "muster: %s: %v\n", profileEnv, err)
			os.Exit(3)
		}
		code := cli.Main()
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(code)
	}
	os.Exit(cli.Main())
}

// Command muster-confine starts muster's sandboxes: muster runs every
// agent, gate and setup step through it when it is installed beside
// muster's executable (confine.Launcher), with the arguments of the
// hidden subcommand muster.ConfineCommand, which muster's own executable
// takes too. It is a program of its own only to start fast: it links the
// confine package and little else, where a re-exec of muster initialises
// and unmaps the whole command tree at every start. It is not meant to be
// run by hand.
package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != muster.ConfineCommand {
		fmt.Fprintf(os.Stderr, "%s: muster starts this program to confine its agents (as %s %s ...); it is not run by hand\n",
			confine.LauncherName, confine.LauncherName, muster.ConfineCommand)
		os.Exit(2)
	}
	os.Exit(confine.Main(os.Args[2:], os.Stderr))
}

// The main goroutine keeps the process's first thread to itself, so the
// thread confine confines before starting the program is never that one
// (which cannot end, and would stay confined: see startConfined).
func init() { runtime.LockOSThread() }

// Package confinestart runs muster's hidden ConfineCommand (muster
// __confine, the re-exec that confines every agent, gate and setup step)
// from a package initialiser, before most of muster's packages are
// initialised: cmd/muster imports it for that alone.
//
// Go initialises every package linked into a binary before main runs,
// whatever main then does, so a check at the top of main would still pay
// the initialisation of the whole command tree (the fleet's NATS server,
// the TUI, the forge and MCP clients, ...) on every confined start. Since
// Go 1.21 the order is specified: at each step the first package, by
// import path, whose imports are all initialised is initialised. This
// package imports only what the ConfineCommand needs, so its initialiser
// runs as soon as confine's are done, before every package that sorts
// after it or waits on one that does (see TestConfineStartsEarly).
// Packages that sort before it and need nothing later (encoding/gob,
// say) are initialised first all the same: what they do at start must
// stay cheap (package-level regular expressions compile on first use).
//
// The ConfineCommand either replaces the process (execve) or, as stage
// one of the sandbox, returns the program's exit status, which this
// package exits with; it never returns to the rest of muster.
package confinestart

import (
	"os"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/confine"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == muster.ConfineCommand {
		os.Exit(confine.Main(os.Args[2:], os.Stderr))
	}
}

// Command muster runs a plan of coding tasks across a crew of AI coding
// agents. See muster --help.
package main

import (
	"os"

	"github.com/muster-run/muster/internal/cli"
)

func main() { os.Exit(cli.Main()) }

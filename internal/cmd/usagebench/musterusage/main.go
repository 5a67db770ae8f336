// Command musterusage runs `muster usage` alone, for the benchmark when
// cmd/muster is not built.
package main

import (
	"fmt"
	"os"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/cli/usage"
)

func main() {
	cmd := usage.NewCmd()
	cmd.SetArgs(os.Args[1:])
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "muster usage:", err)
		switch muster.ErrorCode(err) {
		case muster.CodeInvalid:
			os.Exit(2)
		default:
			os.Exit(3)
		}
	}
}

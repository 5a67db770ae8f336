package pr

import (
	"fmt"
	"io"
	"strings"
)

// AskPassTokenEnv carries the token to muster itself when git runs it as
// GIT_ASKPASS: the token travels in the environment of the push, never
// on a command line, in a URL or in a file.
const AskPassTokenEnv = "MUSTER_ASKPASS_TOKEN"

// AskPass answers git's credential prompt when muster runs as git's
// GIT_ASKPASS (argv: muster PROMPT) with AskPassTokenEnv set: the user
// name GitHub takes with a token, or the token; with AskPassHostEnv set,
// only to a prompt for that host (to another, an empty answer). It
// reports whether it answered; muster's Main calls it before anything
// else.
func AskPass(args []string, getenv func(string) string, out io.Writer) bool {
	token := getenv(AskPassTokenEnv)
	if token == "" || len(args) != 2 {
		return false
	}
	if want := getenv(AskPassHostEnv); want != "" && promptHost(args[1]) != want {
		// Another host asks (a redirect): it gets nothing, and git's
		// push fails on its authentication.
		return true
	}
	switch prompt := args[1]; {
	case strings.HasPrefix(prompt, "Username for "):
		fmt.Fprintln(out, "x-access-token")
	case strings.HasPrefix(prompt, "Password for "):
		fmt.Fprintln(out, token)
	default:
		return false
	}
	return true
}

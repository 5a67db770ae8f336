package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/fleet"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/fsync"
)

func newCredentials(io *cmdutil.IOStreams) *cobra.Command {
	var store, out, revoke string
	var orchestrator bool
	var executors []string
	cmd := &cobra.Command{
		Use:   "credentials (NAME -o FILE | --revoke NAME) [--store DIR]",
		Short: "Issue (or revoke) a fleet identity: a NATS user JWT and seed in a .creds file",
		Long: `Issue the credentials of one fleet member with the operator and account that
muster fleet serve keeps in --store: a NATS user JWT and its seed in NATS's
standard .creds format (the nats CLI reads it too), written to -o FILE with
mode 0600. A worker's credentials name the executors it may serve
(--executor, repeatable); its name is NAME, and the server lets it publish
only its own reports and registration. --orchestrator issues the
credentials of muster run, resume, validate and fleet status. The server
admits new credentials without a restart.

--revoke NAME revokes every credential issued under NAME, through the
account's revocation list: a running fleet serve disconnects its holders.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (revoke != "") {
				return cmdutil.FlagErrorf("pass NAME -o FILE to issue credentials, or --revoke NAME (one of them)")
			}
			if store == "" {
				d, err := DataDir()
				if err != nil {
					return err
				}
				store = filepath.Join(d, "fleet")
			}
			if revoke != "" {
				if out != "" || orchestrator || len(executors) > 0 {
					return cmdutil.FlagErrorf("--revoke takes no -o, --orchestrator or --executor")
				}
				keys, err := fleet.OpenKeys(store, false)
				if err != nil {
					return err
				}
				if err := keys.Revoke(revoke); err != nil {
					return err
				}
				fmt.Fprintf(io.ErrOut, "fleet: revoked the credentials of %s (a running fleet serve on %s disconnects them)\n", revoke, store)
				return nil
			}
			return issue(io, store, args[0], out, orchestrator, executors)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&store, "store", "", "fleet serve's store (default: muster's data directory, fleet/)")
	fs.StringVarP(&out, "output", "o", "", "the .creds file to write")
	fs.BoolVar(&orchestrator, "orchestrator", false, "issue an orchestrator's credentials (muster run, resume, validate, fleet status)")
	fs.StringArrayVar(&executors, "executor", nil, "an executor the worker may serve (repeatable)")
	fs.StringVar(&revoke, "revoke", "", "revoke the credentials issued under this name")
	return cmd
}

// checkIssue refuses, before a credential is issued and recorded, an
// executor name no muster.toml can hold and a -o that cannot be a file:
// a directory, or a file in a directory that does not exist.
func checkIssue(out string, executors []string) error {
	for _, e := range executors {
		if !muster.IDPattern().MatchString(e) {
			return cmdutil.FlagErrorf(`--executor: bad executor name %q: use letters, digits, ".", "_" and "-"`, e)
		}
	}
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return cmdutil.FlagErrorf("-o %s is a directory: name the .creds file to write", out)
	}
	st, err := os.Stat(filepath.Dir(out))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return cmdutil.FlagErrorf("-o %s: the directory %s does not exist: create it, or write the file in an existing one", out, filepath.Dir(out))
	case err != nil:
		return cmdutil.Env("-o %s: %w", out, err)
	case !st.IsDir():
		return cmdutil.FlagErrorf("-o %s: %s is not a directory", out, filepath.Dir(out))
	}
	return nil
}

// issue issues NAME's credentials from the store and writes them to out.
func issue(io *cmdutil.IOStreams, store, name, out string, orchestrator bool, executors []string) error {
	if out == "" {
		return cmdutil.FlagErrorf("credentials %s: pass -o FILE (the .creds file to write)", name)
	}
	if orchestrator == (len(executors) > 0) {
		return cmdutil.FlagErrorf("credentials %s: a worker's name the executors it may serve (--executor NAME, repeatable); an orchestrator's take --orchestrator (one of them)", name)
	}
	if err := checkIssue(out, executors); err != nil {
		return err
	}
	keys, err := fleet.OpenKeys(store, true)
	if err != nil {
		return err
	}
	creds, err := keys.Issue(name, fleet.UserOptions{Orchestrator: orchestrator, Executors: executors})
	if err != nil {
		return err
	}
	// A new 0600 file renamed over out: the secret never lands in a file
	// that existed, whatever its mode or other links.
	if err := fsync.WriteFile(out, creds, 0o600); err != nil {
		return cmdutil.Env("write %s: %w", out, err)
	}
	what := "worker (executors: " + fmt.Sprint(executors) + ")"
	if orchestrator {
		what = "orchestrator"
	}
	fmt.Fprintf(io.ErrOut, "fleet: wrote the credentials of %s, %s, to %s; copy it to its host (mode 0600)\n", name, what, out)
	return nil
}

package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster/internal/cli/cmdutil"
)

// A panic in a command is an internal error: exit 3, not the 2 of a Go
// panic, which would read as bad input.
func TestExecutePanicExits3(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	root := NewRoot(io)
	root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error { panic("boom") }})
	if code := execute(context.Background(), io, root, []string{"boom"}); code != cmdutil.ExitEnvironment {
		t.Fatalf("exit %d, want %d", code, cmdutil.ExitEnvironment)
	}
	if !strings.Contains(errOut.String(), "muster: internal error: boom") {
		t.Fatalf("stderr %q", errOut.String())
	}
}

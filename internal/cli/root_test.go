package cli

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster"
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

// A signal during setup cuts a git command short; the error that makes
// is an interruption (130), not a broken environment (3).
func TestExecuteInterruptedDuringSetupExits130(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(muster.ErrInterrupted)
	root := NewRoot(io)
	root.AddCommand(&cobra.Command{Use: "setup", RunE: func(*cobra.Command, []string) error {
		return cmdutil.Env("not inside a git work tree: git rev-parse: interrupted")
	}})
	if code := execute(ctx, io, root, []string{"setup"}); code != cmdutil.ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, cmdutil.ExitInterrupted)
	}
	if !strings.Contains(errOut.String(), "interrupted before the run started") {
		t.Fatalf("stderr %q", errOut.String())
	}
}

// DESIGN.md is not in the repository: no command's help, no page of the
// docs, and no code or testscript comment may send a reader there.
func TestNoHelpOrDocCitesDesign(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		var b bytes.Buffer
		c.SetOut(&b)
		c.SetErr(&b)
		if err := c.Help(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "DESIGN") {
			t.Errorf("%s --help cites DESIGN.md:\n%s", c.CommandPath(), b.String())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: new(bytes.Buffer), ErrOut: new(bytes.Buffer)}
	walk(NewRoot(io))
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs: %v %v", docs, err)
	}
	more, _ := filepath.Glob("../../docs/*/*.md")
	for _, p := range append(append(docs, more...), "../../README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "DESIGN.md") {
			t.Errorf("%s cites DESIGN.md, which is not in the repository", p)
		}
	}
	// Code comments and the testscripts' comments cite ARCHITECTURE.md.
	cite := "DESIGN.md" + " §"
	err = filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".txtar") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for n, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, cite) {
				t.Errorf("%s:%d cites %s..., which is not in the repository: cite ARCHITECTURE.md §N", p, n+1, cite)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// muster report | head: a write to a standard output whose reader went
// away ends the command quietly with 141 (128 + SIGPIPE), in one place
// for every command (issue 25).
func TestExecuteClosedStdoutIsQuiet(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.Close()
	var errOut bytes.Buffer
	io := &cmdutil.IOStreams{In: strings.NewReader(""), Out: w, ErrOut: &errOut}
	root := NewRoot(io)
	root.AddCommand(&cobra.Command{Use: "print", RunE: func(cmd *cobra.Command, _ []string) error {
		_, err := fmt.Fprintln(io.Out, "a line")
		return fmt.Errorf("write: %w", err)
	}})
	if code := execute(context.Background(), io, root, []string{"print"}); code != cmdutil.ExitBrokenPipe {
		t.Fatalf("exit %d, want %d; stderr %q", code, cmdutil.ExitBrokenPipe, errOut.String())
	}
	if errOut.Len() != 0 {
		t.Fatalf("stderr %q, want nothing", errOut.String())
	}
	// Any other broken pipe (an agent's stdin, say) is still an error.
	root.AddCommand(&cobra.Command{Use: "other", RunE: func(*cobra.Command, []string) error {
		return &fs.PathError{Op: "write", Path: "/proc/self/fd/9", Err: syscall.EPIPE}
	}})
	if code := execute(context.Background(), io, root, []string{"other"}); code != cmdutil.ExitEnvironment {
		t.Fatalf("exit %d, want %d", code, cmdutil.ExitEnvironment)
	}
}

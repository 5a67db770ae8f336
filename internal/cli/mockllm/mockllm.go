// Package mockllm is the `muster mock-llm` command: it serves the scripted
// mock model server of package mockllm on a loopback address until
// interrupted, so real agent CLIs can be pointed at it.
package mockllm

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/muster-run/muster/mockllm"
)

// Options are the command's flags.
type Options struct {
	Addr   string
	Script string
	Log    string
}

// NewCmd returns the `mock-llm` command.
func NewCmd() *cobra.Command {
	opts := &Options{}
	cmd := &cobra.Command{
		Use:   "mock-llm",
		Short: "Serve a scripted mock model API (Anthropic, OpenAI, Gemini) on 127.0.0.1",
		Long: `Serve a scripted mock model server on a loopback address. It speaks the
Anthropic Messages API (/v1/messages), the OpenAI Responses (/v1/responses)
and Chat Completions (/v1/chat/completions) APIs, and Gemini
(/v1beta/models/MODEL:streamGenerateContent). Replies come from the script
(JSON or YAML); see docs/agents-http.md. The first line on stdout is the
base URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return Run(ctx, opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:0", "loopback address to listen on (port 0: any free port)")
	cmd.Flags().StringVar(&opts.Script, "script", "", "scenario script, JSON or YAML (default: answer \"OK\" to everything)")
	cmd.Flags().StringVar(&opts.Log, "log", "", "append every request as a JSON line to this file (secret headers redacted)")
	return cmd
}

// Run serves until ctx is done, printing the base URL to out first.
func Run(ctx context.Context, opts *Options, out io.Writer) error {
	var script *mockllm.Script
	if opts.Script != "" {
		s, err := mockllm.LoadScript(opts.Script)
		if err != nil {
			return err
		}
		script = s
	}
	var log io.Writer
	if opts.Log != "" {
		f, err := os.OpenFile(opts.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		log = f
	}
	srv, err := mockllm.Listen(opts.Addr, script, log)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, srv.URL)
	<-ctx.Done()
	return srv.Close()
}

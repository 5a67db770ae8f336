// Package cmdutil holds what every muster command shares: the streams,
// the mapping from errors to exit codes, finding a repository and its
// runs, loading the config, and the JSON exporter.
package cmdutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/muster-run/muster"
)

// Exit statuses (ARCHITECTURE.md §2.2).
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitInvalid     = 2
	ExitEnvironment = 3
	ExitInterrupted = 130
	// ExitBrokenPipe is a closed standard output or error (muster report
	// | head): 128 + SIGPIPE, as a shell reports a program SIGPIPE ended.
	ExitBrokenPipe = 141
)

// IOStreams are a command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// System returns the process's streams.
func System() *IOStreams { return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr} }

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// ColorEnabled reports whether to colour output written to w: on a
// terminal, unless NO_COLOR is set (to anything) or TERM is dumb.
func ColorEnabled(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set || os.Getenv("TERM") == "dumb" {
		return false
	}
	return IsTerminal(w)
}

// ExitCode maps an error to the exit status of ARCHITECTURE.md §2.2.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var fe *FlagError
	if errors.As(err, &fe) {
		return ExitInvalid
	}
	switch muster.ErrorCode(err) {
	case muster.CodeInvalid:
		return ExitInvalid
	case muster.CodeFailed:
		return ExitFailed
	case muster.CodeInterrupted:
		return ExitInterrupted
	}
	return ExitEnvironment
}

// FlagError is bad command-line input.
type FlagError struct{ Err error }

// Error returns the wrapped error's text.
func (e *FlagError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf returns a *FlagError.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// Invalid returns a bad-input error; %w keeps the cause in the chain.
func Invalid(format string, args ...any) error {
	return muster.Errorf(muster.CodeInvalid, format, args...)
}

// Env returns an environment or internal error; %w keeps the cause in
// the chain.
func Env(format string, args ...any) error {
	return muster.Errorf(muster.CodeInternal, format, args...)
}

// Silent marks an error whose message was already printed.
type Silent struct{ Err error }

// Error returns the wrapped error's text.
func (e *Silent) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *Silent) Unwrap() error { return e.Err }

// WriteJSON writes v as indented JSON with a final newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

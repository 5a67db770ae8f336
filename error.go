package muster

import (
	"errors"
	"fmt"
)

// Code classifies an error for the exit status (ARCHITECTURE.md §2.2).
type Code int

// Error codes; cmdutil maps them to exit statuses.
const (
	CodeInternal    Code = iota // 3: environment or internal
	CodeInvalid                 // 2: bad input
	CodeFailed                  // 1: a task failed or was skipped; verify mismatch
	CodeInterrupted             // 130: interrupted, resumable
)

// Error is a domain error with a code. Message is for people.
type Error struct {
	Code    Code
	Op      string
	Message string
	Err     error
}

// Error returns the operation and the message (or the wrapped error).
func (e *Error) Error() string {
	switch {
	case e.Op != "" && e.Message != "":
		return e.Op + ": " + e.Message
	case e.Message != "":
		return e.Message
	case e.Op != "" && e.Err != nil:
		return e.Op + ": " + e.Err.Error()
	case e.Err != nil:
		return e.Err.Error()
	}
	return e.Op
}

// Unwrap returns the wrapped error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the code and a formatted message; a %w
// verb keeps the error it formats in the chain.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain;
// CodeInvalid for Problems, CodeInterrupted for ErrInterrupted, and
// CodeInternal for anything else.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	var ps Problems
	if errors.As(err, &ps) {
		return CodeInvalid
	}
	if errors.Is(err, ErrInterrupted) {
		return CodeInterrupted
	}
	return CodeInternal
}

// Sentinel causes.
var (
	ErrInterrupted = errors.New("interrupted")
	ErrFailFast    = errors.New("stopped after a failure (on_failure = stop)")
	ErrBudget      = errors.New("budget exhausted")
	// ErrBranchMoved: the run branch is not where muster last left it
	// (someone else moved, rewrote or deleted it). The run stops.
	ErrBranchMoved = errors.New("the run branch was moved outside muster")
)

// PanicError is a panic recovered at a goroutine boundary. It is an
// internal error (exit 3, never the exit 2 of bad input): the run stops
// cleanly, its agents are stopped, and RunInterrupted is recorded, so
// that a resume finishes it.
type PanicError struct {
	Where string // the goroutine, e.g. "the attempt of task a"
	Value any    // what was passed to panic
	Stack string // the goroutine's stack when it panicked
}

// Error names where the panic happened and its value.
func (e *PanicError) Error() string {
	return fmt.Sprintf("internal error: panic in %s: %v", e.Where, e.Value)
}

// TimeoutError is the cause of an attempt cancelled at its deadline.
type TimeoutError struct{ After string }

// Error says how long the attempt ran.
func (e *TimeoutError) Error() string { return "timed out after " + e.After }

// Problem is one finding of validation, with its position.
type Problem struct {
	File    string
	Line    int
	Message string
	Warning bool
}

// String returns the problem as FILE:LINE: message.
func (p Problem) String() string {
	prefix := ""
	if p.Warning {
		prefix = "warning: "
	}
	if p.File == "" {
		return prefix + p.Message
	}
	if p.Line <= 0 {
		return fmt.Sprintf("%s: %s%s", p.File, prefix, p.Message)
	}
	return fmt.Sprintf("%s:%d: %s%s", p.File, p.Line, prefix, p.Message)
}

// Problems is a list of validation problems; as an error it is bad input.
type Problems []Problem

// Error returns the problems, one a line.
func (ps Problems) Error() string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += "\n"
		}
		s += p.String()
	}
	return s
}

// Errors returns only the problems that are not warnings.
func (ps Problems) Errors() Problems {
	var out Problems
	for _, p := range ps {
		if !p.Warning {
			out = append(out, p)
		}
	}
	return out
}

package mcpserver

import (
	"regexp"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// flagToken is a command-line flag in an error's text: "--budget-usd",
// "-o".
var flagToken = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|[\s(\x60"'])(--[a-z][a-z-]*|-o)\b( [A-Z][A-Z=\[\]:_]*)?`)
})

// paramError is an error whose text names the tool's parameters where
// the command line's would name its flags.
type paramError struct {
	text string
	err  error
}

func (e *paramError) Error() string { return e.text }
func (e *paramError) Unwrap() error { return e.err }

// asParams rewrites the flags an error of a tool names ("pass --force",
// "--executor x", "-o another file": the commands the tools share speak
// to a person at a shell) as that tool's parameters ("force: true",
// "executor x", "output"): the one place an MCP client is told what it
// can pass. A flag the tool has no parameter for is left as it is.
func asParams(sc *jsonschema.Schema, err error) error {
	if err == nil || sc == nil {
		return err
	}
	msg := err.Error()
	out := flagToken().ReplaceAllStringFunc(msg, func(m string) string {
		sub := flagToken().FindStringSubmatch(m)
		lead, flag, metavar := sub[1], sub[2], sub[3]
		name := strings.ReplaceAll(strings.TrimLeft(flag, "-"), "-", "_")
		if flag == "-o" {
			name = "output"
		}
		p, ok := sc.Properties[name]
		if !ok {
			return m
		}
		if p.Type == "boolean" {
			return lead + name + ": true" + metavar
		}
		return lead + name + metavar
	})
	if out == msg {
		return err
	}
	return &paramError{text: out, err: err}
}

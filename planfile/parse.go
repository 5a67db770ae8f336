package planfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/muster-run/muster"
)

// IsYAML reports whether a plan file name is in the YAML form (it ends in
// .yaml or .yml, in any case).
func IsYAML(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return true
	}
	return false
}

// Parse reads a plan from data. name is the file name used in messages;
// its extension picks the format (.yaml/.yml: YAML, anything else:
// Markdown). Parse returns the plan it could read, with Task.Line and
// Task.KeyLines set, and every problem of syntax and of field values, in
// line order. It checks nothing that needs more than one task (see
// Validate). It never panics.
func Parse(name string, data []byte) (plan *muster.Plan, probs muster.Problems) {
	defer func() {
		if r := recover(); r != nil {
			plan = &muster.Plan{Source: name, Tasks: []*muster.Task{}}
			probs = muster.Problems{{File: name, Message: fmt.Sprintf("cannot read the plan: %v", r)}}
		}
	}()
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte-order mark
	if !utf8.Valid(data) {
		return &muster.Plan{Source: name, Tasks: []*muster.Task{}},
			muster.Problems{{File: name, Line: firstInvalidLine(data), Message: "not UTF-8 text"}}
	}
	if IsYAML(name) {
		plan, probs = parseYAML(name, data)
	} else {
		plan, probs = parseMarkdown(name, data)
	}
	SortProblems(probs)
	return plan, probs
}

// Load reads and parses the plan file at path. Problems (warnings
// aside) come back as a *muster.Error with code muster.CodeInvalid that
// wraps muster.Problems
// (errors.As finds them; the message is one "FILE:LINE: message" a
// line), along with the plan as far as it could be read; a file that
// cannot be read is a *muster.Error with code muster.CodeInvalid naming
// the file.
func Load(path string) (*muster.Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &muster.Error{Code: muster.CodeInvalid, Op: "read plan", Err: err}
	}
	p, probs := Parse(path, data)
	if errs := probs.Errors(); len(errs) > 0 {
		return p, &muster.Error{Code: muster.CodeInvalid, Err: errs}
	}
	return p, nil
}

func firstInvalidLine(data []byte) int {
	line := 1
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r == utf8.RuneError && size <= 1 {
			return line
		}
		if r == '\n' {
			line++
		}
		data = data[size:]
	}
	return line
}

// Check reads the plan file at path and validates it against cfg: the
// whole of what `muster validate` and `muster run` need. It returns the
// plan and every problem (of parsing and of validation) sorted by line;
// warnings are among them (see muster.Problems.Errors). err is only for a
// file that cannot be read (a *muster.Error with code
// muster.CodeInvalid).
func Check(path string, cfg *muster.Config, opts Options) (*muster.Plan, muster.Problems, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &muster.Error{Code: muster.CodeInvalid, Op: "read plan", Err: err}
	}
	p, probs := CheckData(path, data, cfg, opts)
	return p, probs, nil
}

// CheckData is Check of a plan already read: name is the file name used
// in messages.
func CheckData(name string, data []byte, cfg *muster.Config, opts Options) (*muster.Plan, muster.Problems) {
	p, probs := Parse(name, data)
	if len(p.Tasks) > 0 || len(probs.Errors()) == 0 {
		// A plan broken before its first task is not also "empty".
		probs = append(probs, Validate(p, cfg, opts)...)
	}
	SortProblems(probs)
	return p, probs
}

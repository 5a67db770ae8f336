package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/suggest"
)

// ParseCrew reads one --crew flag: "NAME=KIND[:CLONES][:PROGRAM ARGS...]".
// CLONES defaults to 1. The program part is only for kind "command",
// which needs it; it is split at spaces (no shell quoting). The executor
// gets the role coder. Examples:
//
//	claude=claude-code:3
//	sim=sim:2
//	local=command:2:./scripts/agent.sh --fast
//	local=command:./scripts/agent.sh
//
// Errors are *muster.Error with code muster.CodeInvalid naming the flag.
func ParseCrew(flag string) (*muster.ExecutorSpec, error) {
	bad := func(format string, args ...any) error {
		return &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("--crew %q: ", flag) + fmt.Sprintf(format, args...)}
	}
	name, rest, ok := strings.Cut(flag, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || rest == "" {
		return nil, bad("want NAME=KIND[:CLONES], such as claude=claude-code:3")
	}
	if !namePattern().MatchString(name) {
		return nil, bad(`bad executor name %q: use letters, digits, ".", "_" and "-"`, name)
	}
	kind, rest, hasRest := strings.Cut(rest, ":")
	kind = strings.TrimSpace(kind)
	if !contains(muster.ExecutorKinds, kind) {
		if n := suggest.Nearest(kind, muster.ExecutorKinds); n != "" {
			return nil, bad("unknown kind %q; did you mean %q? (known kinds: %s)", kind, n, strings.Join(muster.ExecutorKinds, ", "))
		}
		return nil, bad("unknown kind %q (known kinds: %s)", kind, strings.Join(muster.ExecutorKinds, ", "))
	}
	e := &muster.ExecutorSpec{Name: name, Kind: muster.ExecKind(kind), Clones: 1, Roles: []muster.Role{muster.RoleCoder}}
	if hasRest {
		first, prog, hasProg := strings.Cut(rest, ":")
		if n, err := strconv.Atoi(strings.TrimSpace(first)); err == nil {
			if n < 1 || n > 1000 {
				return nil, bad("clones must be from 1 to 1000")
			}
			e.Clones = n
		} else if isDigits(strings.TrimSpace(first)) {
			return nil, bad("clones must be from 1 to 1000")
		} else {
			// No clone count: all of rest is the program.
			prog, hasProg = rest, true
		}
		if hasProg {
			e.Command = strings.Fields(prog)
		}
	}
	if !muster.LookupKind(muster.ExecKind(kind)).NeedsCommand && len(e.Command) > 0 {
		return nil, bad("only kinds command and acp take a program")
	}
	// A command executor without a program is fine here: it may override
	// one of muster.toml that has its program (MergeCrew checks).
	return e, nil
}

// MergeCrew parses --crew flags and merges them into cfg (see Merge). A
// flag of kind command must give a program unless it overrides a command
// executor of the config that has one.
func MergeCrew(cfg *muster.Config, flags []string) error {
	var crew []*muster.ExecutorSpec
	for _, f := range flags {
		spec, err := ParseCrew(f)
		if err != nil {
			return err
		}
		crew = append(crew, spec)
	}
	Merge(cfg, crew)
	for i, c := range crew {
		if c.Kind != muster.ExecCommand {
			continue
		}
		if e := cfg.Executor(c.Name); e == nil || len(e.Command) == 0 {
			return &muster.Error{Code: muster.CodeInvalid, Message: fmt.Sprintf("--crew %q: kind command needs a program: NAME=command[:CLONES]:PROGRAM [ARGS...]", flags[i])}
		}
	}
	return nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Merge adds the executors of crew to cfg, in order. An executor whose
// name cfg already has overrides it: with the same kind, only the clone
// count (and the command, when the flag gives one) change and the rest of
// the file's settings stay; with another kind, the flag's executor
// replaces it, keeping only the roles the file listed.
func Merge(cfg *muster.Config, crew []*muster.ExecutorSpec) {
	for _, c := range crew {
		if c == nil {
			continue
		}
		old := cfg.Executor(c.Name)
		switch {
		case old == nil:
			cp := *c
			cfg.Executors = append(cfg.Executors, &cp)
		case old.Kind == c.Kind:
			old.Clones = c.Clones
			if len(c.Command) > 0 {
				old.Command = c.Command
			}
		default:
			// Another kind: the flag's executor replaces it, but keeps the
			// roles the file gave it (a flag cannot name roles, and a
			// reviewer should not turn into a coder).
			cp := *c
			if len(old.Roles) > 0 {
				cp.Roles = old.Roles
			}
			*old = cp
		}
	}
}

// Package preflight is what every plan-reading command does before it
// spends: the config with the command line's overrides (Flags,
// LoadConfig), the plan checked against it (Preflight: crew, committed
// commands, approvals, prices, gate programs), the problems printed, the
// redactor and the journaled config, and how agents are confined. It
// links no driver: validate, verify, report and plan use it without the
// run's session (internal/cli/runner, which imports this package).
package preflight

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/reserve"
	"github.com/muster-run/muster/planfile"
)

// Preflight is the one check validate and run share, so that validate
// passes nothing run would refuse: the plan against the config
// (planfile.Check) with muster's paths and the config file in use
// reserved, a crew for agent tasks (NoCrew) whose commands are the
// user's (CheckCommands), the authorities approved
// (Unapproved), the price table, and every gate's program (a warning when
// it is neither in the repository nor on PATH). It returns the plan and
// every problem, each FILE:LINE; err is a plan that cannot be read or a
// missing crew.
func Preflight(ctx context.Context, repo *cmdutil.Repo, planPath string, cfg *muster.Config, strict bool) (*muster.Plan, muster.Problems, error) {
	crew := cfg
	if len(cfg.Executors) == 0 {
		crew = nil // no crew configured: executors and roles are not checked (NoCrew says so)
	}
	opts := planfile.Options{Strict: strict, Reserved: reservedPaths(repo, cfg, planPath)}
	plan, probs, err := planfile.Check(planPath, crew, opts)
	if err != nil {
		return nil, nil, err
	}
	if plan != nil && len(probs.Errors()) == 0 {
		if err := NoCrew(plan, cfg); err != nil {
			return plan, probs, err
		}
		top := "."
		if repo != nil {
			top = repo.Top
		}
		if err := CheckCommands(ctx, top, cfg); err != nil {
			return plan, probs, err
		}
	}
	probs = append(probs, Unapproved(plan, cfg)...)
	if _, err := Prices(cfg); err != nil {
		probs = append(probs, muster.Problem{File: cfg.Source, Line: keyLine(cfg.Source, "prices_file"),
			Message: err.Error() + ": name a readable price table, or drop the key for the built-in one"})
	}
	probs = append(probs, missingGates(repo, plan, cfg)...)
	probs = append(probs, keysLeaving(cfg)...)
	return plan, probs, nil
}

// NoCrew is the error of a plan with agent tasks and a config with no
// executor (no muster.toml, no --crew): validate and run both give it,
// and both point at muster init. nil when the plan can run.
func NoCrew(plan *muster.Plan, cfg *muster.Config) error {
	if plan == nil || len(cfg.Executors) > 0 || !needsCrew(plan) {
		return nil
	}
	where := "no muster.toml"
	if cfg.Source != "" {
		where = cfg.Source + " has no [executors.NAME] table"
	}
	return cmdutil.Invalid("no executors: %s and no --crew; run muster init to write a muster.toml for the agents installed here, or pass --crew NAME=KIND[:CLONES] (e.g. --crew sim=sim:2 for a simulated crew)", where)
}

func needsCrew(p *muster.Plan) bool {
	for _, t := range p.Tasks {
		if !t.Done && t.EffectiveKind() != muster.KindCode {
			return true
		}
	}
	return false
}

// reservedPaths are the run's reserved files (reserve.Paths): the config
// file in use, the plan, the prices file and the programs the config
// names by a relative path, each when it lies in the repository
// (muster.toml is reserved anyway). No Owns may name them.
func reservedPaths(repo *cmdutil.Repo, cfg *muster.Config, planPath string) []string {
	if repo == nil {
		return nil
	}
	return reserve.Paths(repo.Top, cfg, planPath)
}

// keyLine returns the first line of file that sets key (0 when unknown).
func keyLine(file, key string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		if k, _, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && strings.TrimSpace(k) == key {
			return n
		}
	}
	return 0
}

// CheckBudget reads --budget-usd as strictly as budget_usd in the TOML: a
// number, 0 or more, within the cap (NaN and infinities are refused, not
// taken as "no budget").
func CheckBudget(usd float64) error {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return cmdutil.FlagErrorf("--budget-usd %v: want a number of dollars, 0 or more", usd)
	}
	if usd*1e6 > muster.MaxBudgetMicros {
		return cmdutil.FlagErrorf("--budget-usd %v is more than the cap of %d", usd, muster.MaxBudgetMicros/1_000_000)
	}
	return nil
}

// CheckRunID checks a --run-id: the ID pattern and the cap on its length
// (a run ID names a branch and a directory).
func CheckRunID(id string) error {
	switch {
	case len(id) > muster.MaxIDLength:
		return cmdutil.FlagErrorf("--run-id of %d characters: the cap is %d", len(id), muster.MaxIDLength)
	case !muster.IDPattern().MatchString(id) || strings.Contains(id, "..") || strings.HasSuffix(id, ".lock") || strings.HasSuffix(id, "."):
		// The run branch is muster/<id>: git refuses "..", a ".lock"
		// suffix and a trailing ".".
		return cmdutil.FlagErrorf(`--run-id %q: use letters, digits, '.', '_' and '-' (no "..", no ".lock" suffix, not ending in ".")`, id)
	}
	return nil
}

// missingGates warns of each gate whose program is neither in the
// repository (a path such as ./scripts/check.sh) nor on PATH: it would
// fail every attempt as an environment error, not as the task's fault.
func missingGates(repo *cmdutil.Repo, plan *muster.Plan, cfg *muster.Config) muster.Problems {
	top := "."
	if repo != nil {
		top = repo.Top
	}
	var out muster.Problems
	warn := func(file string, line int, what, command string) {
		prog := GateProgram(command)
		if prog == "" || programFound(top, prog) {
			return
		}
		out = append(out, muster.Problem{File: file, Line: line, Warning: true,
			Message: fmt.Sprintf("%s: program %q is not in the repository nor on PATH; the gate would fail as an environment error: install it or fix the command", what, prog)})
	}
	for _, g := range cfg.Gates {
		warn(cfg.Source, g.Line, "gate "+g.Name, g.Command)
	}
	if plan == nil {
		return out
	}
	for _, t := range plan.Tasks {
		if t.Done {
			continue
		}
		for k, g := range t.Gates {
			warn(plan.Source, t.ItemLine("gate", k), "task "+string(t.ID)+": Gate", g)
		}
		if t.Loop != nil {
			warn(plan.Source, t.LineOf("loop"), "task "+string(t.ID)+": Loop check", t.Loop.Check)
		}
	}
	return out
}

// shellWords are the sh builtins and keywords a gate command may start
// with; their program is not looked up.
var shellWords = map[string]bool{
	"!": true, "{": true, "(": true, "[": true, "[[": true, ".": true, ":": true, "cd": true, "echo": true, "eval": true, "exec": true,
	"exit": true, "export": true, "false": true, "for": true, "if": true, "printf": true, "read": true, "set": true, "test": true,
	"true": true, "until": true, "while": true, "case": true, "command": true, "env": true, "time": true, "ulimit": true, "umask": true,
}

// GateProgram returns the program a gate command (run by sh -c) starts,
// past variable assignments; "" when it cannot be told without a shell
// (a builtin, a keyword, an expansion, a subshell).
func GateProgram(command string) string {
	for _, f := range strings.Fields(command) {
		if strings.Contains(f, "=") && !strings.HasPrefix(f, "=") && !strings.ContainsAny(f[:strings.Index(f, "=")], "/$") {
			continue // NAME=value
		}
		if shellWords[f] || strings.ContainsAny(f, "$`()<>|&;*?~\"'\\") {
			return ""
		}
		return f
	}
	return ""
}

func programFound(top, prog string) bool {
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) {
			p = filepath.Join(top, p)
		}
		_, err := os.Stat(p)
		return err == nil
	}
	_, err := exec.LookPath(prog)
	return err == nil
}

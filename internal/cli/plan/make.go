package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/git"
	"github.com/muster-run/muster/internal/agents"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/proc"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/journal"
	"github.com/muster-run/muster/planfile"
	"github.com/muster-run/muster/planner"
)

// Request is one planning: for muster plan, run --goal and the MCP
// server's plan tool.
type Request struct {
	Goal string
	// Executor names the planner; empty: the first executor with the
	// planner role, else the first coder.
	Executor string
	// Output is the file the plan is written to (relative to the current
	// directory); empty: only the plan session's directory gets it.
	Output string
	// Force replaces an existing Output.
	Force bool
	// Tries bounds the questions (default planner.DefaultTries).
	Tries int
	// Log, if set, gets progress lines for people.
	Log io.Writer
}

// Outcome is what a planning left.
type Outcome struct {
	// Session is the plan session's ID; Dir its directory (journal, and
	// plan.md once valid).
	Session string `json:"session"`
	Dir     string `json:"dir"`
	// Path is where the valid plan was written (absolute); empty when no
	// plan validated.
	Path string `json:"path,omitempty"`
	// Text is the valid plan.
	Text []byte `json:"-"`
	// Plan is Text parsed.
	Plan *muster.Plan `json:"-"`
	// Problems are the last try's problems (warnings of a valid plan).
	Problems muster.Problems  `json:"-"`
	Summary  *planner.Summary `json:"summary,omitempty"`
	Tries    int              `json:"tries"`
	Executor string           `json:"executor"`
	Usage    muster.Usage     `json:"usage"`
}

// Valid reports whether a plan validated.
func (o *Outcome) Valid() bool { return o != nil && o.Plan != nil }

// Make runs a plan session in repo for the crew of cfg: it picks the
// planner, refuses an existing output file (unless Force) before it
// spends anything, asks the planner in a clone at HEAD, validates, and
// writes the plan. A plan that never validated is not an error: the
// Outcome has no Path and holds the last problems.
func Make(ctx context.Context, repo *cmdutil.Repo, cfg *muster.Config, req Request) (*Outcome, error) {
	spec, err := Pick(cfg, req.Executor)
	if err != nil {
		return nil, err
	}
	out, err := outputPath(req)
	if err != nil {
		return nil, err
	}
	exec, err := agents.New(spec)
	if err != nil {
		return nil, cmdutil.Invalid("%w", err)
	}
	prices, err := preflight.Prices(cfg)
	if err != nil {
		return nil, err
	}
	confinement, warnings, err := preflight.RepoConfinement(repo, cfg)
	if err != nil {
		return nil, err
	}
	// Each key to its executor: the planner gets its own only.
	warnings = append(warnings, cfg.ScopeKeys()...)
	proc.SetKeyVars(cfg.KeyVars()...)
	for _, w := range warnings {
		if req.Log != nil {
			fmt.Fprintln(req.Log, "warning: "+w)
		}
	}
	id := "plan-" + cmdutil.NewRunID(time.Now())
	ws, err := git.Open(ctx, git.Options{Repo: repo.Top, RunID: id, Keep: cfg.CleanKeep(), MaxClones: cfg.Pool.MaxClones})
	if err != nil {
		return nil, cmdutil.Env("git: %w", err)
	}
	// The session's branch never gets a commit: it goes with the session.
	defer func() {
		bg := context.WithoutCancel(ctx)
		_ = ws.Close(bg)
		_ = git.DropRunBranch(bg, repo.Top, id, ws.Base())
	}()
	j, _, err := journal.Open(repo.JournalPath(id), journal.Options{})
	if err != nil {
		return nil, cmdutil.Env("%w", err)
	}
	defer j.Close()
	name := planName(repo, req.Output, out)
	o := &Outcome{Session: id, Dir: ws.RunDir(), Executor: spec.Name}
	res, err := planner.Run(ctx, planner.Options{
		Goal: req.Goal, RunID: id, Output: name, Tries: req.Tries, Spec: spec, Executor: exec,
		Workspace: ws, Base: ws.Base(), Config: cfg, Journaled: preflight.Journaled(cfg), Redactor: preflight.Redactor(cfg),
		Journal: j, Check: Checker(cfg),
		ScratchDir: filepath.Join(ws.RunDir(), "scratch"), LogDir: filepath.Join(ws.RunDir(), muster.LogDir), Price: prices.Cost, Grace: cfg.Grace(), Confine: confinement,
		OnEvent: func(e *muster.Event) { progress(req.Log, spec, e, req.Tries) },
	})
	if res != nil {
		o.Tries, o.Usage, o.Problems = res.Tries, res.Usage, res.Problems
	}
	if err != nil {
		return o, err
	}
	if !res.Valid() {
		return o, nil
	}
	o.Text, o.Plan = res.Text, res.Plan
	s := planner.Summarize(res.Plan, cfg)
	o.Summary = &s
	return o, o.write(req, out)
}

// outputPath checks -o: a Markdown file that is no directory and does
// not exist unless --force; its absolute path ("" without -o).
func outputPath(req Request) (string, error) {
	if req.Output == "" {
		return "", nil
	}
	if planfile.IsYAML(req.Output) {
		return "", cmdutil.Invalid("%s: muster plan writes Markdown plans; name the file .md", req.Output)
	}
	out, err := filepath.Abs(req.Output)
	if err != nil {
		return "", cmdutil.Env("%w", err)
	}
	if st, err := os.Lstat(out); err == nil {
		if st.IsDir() {
			return "", cmdutil.Invalid("%s is a directory: name a plan file with -o", req.Output)
		}
		if !req.Force {
			return "", cmdutil.Invalid("%s exists already: pass --force to replace it, or write another file with -o FILE", req.Output)
		}
	}
	return out, outputDir(req.Output, filepath.Dir(out))
}

// outputDir checks, before the planner spends anything, that the plan
// can be written in dir: a directory that exists (else bad input) and
// takes a file (else the environment's fault).
func outputDir(output, dir string) error {
	st, err := os.Stat(dir)
	shown := filepath.Dir(output)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return cmdutil.Invalid("%s: the directory %s does not exist: create it, or name a plan file in an existing one with -o", output, shown)
	case err != nil:
		return cmdutil.Env("%s: %w", output, err)
	case !st.IsDir():
		return cmdutil.Invalid("%s: %s is not a directory: name a plan file with -o", output, shown)
	}
	f, err := os.CreateTemp(dir, ".muster-plan-*")
	if err != nil {
		return cmdutil.Env("%s: cannot write in %s: %w", output, shown, err)
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return cmdutil.Env("%s: %w", output, err)
	}
	return nil
}

// planName is how problems name the plan: as the user gave it, or
// relative to the repository when it was given absolute inside it (the
// MCP server).
func planName(repo *cmdutil.Repo, output, out string) string {
	if output == "" {
		return "plan.md"
	}
	if rel, err := filepath.Rel(repo.Top, out); err == nil && filepath.IsAbs(output) && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return output
}

// write keeps the plan in the session's directory and writes it to out
// (-o) when given, never over a file that appeared meanwhile without
// --force.
func (o *Outcome) write(req Request, out string) error {
	record := filepath.Join(o.Dir, "plan.md")
	if err := writeFile(record, o.Text, true); err != nil {
		return cmdutil.Env("write %s: %w", record, err)
	}
	o.Path = record
	if out != "" {
		if err := writeFile(out, o.Text, req.Force); err != nil {
			if errors.Is(err, os.ErrExist) {
				return cmdutil.Invalid("%s appeared while the planner worked: the plan is in %s; pass --force to replace it", req.Output, record)
			}
			return cmdutil.Env("write %s: %w", req.Output, err)
		}
		o.Path = out
	}
	return nil
}

// Pick returns the planner executor: the one named, else the first with
// the planner role, else the first coder.
func Pick(cfg *muster.Config, name string) (*muster.ExecutorSpec, error) {
	var spec *muster.ExecutorSpec
	switch {
	case name != "":
		if spec = cfg.Executor(name); spec == nil {
			return nil, cmdutil.FlagErrorf("--executor %s: no such executor (the crew has %s)", name, names(cfg))
		}
	default:
		for _, e := range cfg.Executors {
			if e.HasRole(muster.RolePlanner) {
				spec = e
				break
			}
		}
		for _, e := range cfg.Executors {
			if spec == nil && e.HasRole(muster.RoleCoder) {
				spec = e
			}
		}
	}
	if spec == nil {
		return nil, cmdutil.Invalid(`no executor to plan with: add one with roles = ["planner"] to muster.toml, or pass --crew NAME=KIND`)
	}
	if spec.Kind == muster.ExecSim {
		return nil, cmdutil.Invalid("executor %s is of kind sim, which cannot write plans: pick another with --executor, or give one roles = [\"planner\"]", spec.Name)
	}
	return spec, nil
}

func names(cfg *muster.Config) string {
	if len(cfg.Executors) == 0 {
		return "none"
	}
	s := ""
	for i, e := range cfg.Executors {
		if i > 0 {
			s += ", "
		}
		s += e.Name
	}
	return s
}

// Checker returns the check `muster validate` makes of a plan, for the
// crew of cfg (none checked when no executor is configured), with the
// plan's authorities against what is approved.
func Checker(cfg *muster.Config) func(name string, data []byte) (*muster.Plan, muster.Problems) {
	crew := cfg
	if len(cfg.Executors) == 0 {
		crew = nil
	}
	return func(name string, data []byte) (*muster.Plan, muster.Problems) {
		p, probs := planfile.CheckData(name, data, crew, planfile.Options{})
		return p, append(probs, preflight.Unapproved(p, cfg)...)
	}
}

// writeFile writes data to path through a temporary file in the same
// directory: renamed over path when replace is set, else linked to it,
// which fails when path exists.
func writeFile(path string, data []byte, replace bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".muster-plan-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if replace {
		return os.Rename(tmp.Name(), path)
	}
	return os.Link(tmp.Name(), path)
}

// progress prints one line for people per try.
func progress(w io.Writer, spec *muster.ExecutorSpec, e *muster.Event, tries int) {
	if w == nil {
		return
	}
	if tries <= 0 {
		tries = planner.DefaultTries
	}
	switch e.Type {
	case muster.EvTaskStarted:
		fmt.Fprintf(w, "planning with %s (%s), try %d of %d\n", spec.Name, spec.Kind, e.Attempt, tries)
	case muster.EvTaskFailed:
		more := ""
		if e.Retry {
			more = "; asking again"
		}
		fmt.Fprintf(w, "try %d: %s%s\n", e.Attempt, textsafe.Sanitize(e.Reason), more)
	}
}

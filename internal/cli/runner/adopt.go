package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/engine"
	"github.com/muster-run/muster/internal/cli/cmdutil"
	"github.com/muster-run/muster/internal/cli/preflight"
	"github.com/muster-run/muster/internal/fsync"
	"github.com/muster-run/muster/internal/textsafe"
	"github.com/muster-run/muster/planfile"
)

// adoption is an edited plan file a resume adopts: the version file it
// writes into the run directory and the PlanAdopted event that records
// it (ARCHITECTURE.md §2.6, §2.7).
type adoption struct {
	data  []byte       // the plan file's bytes, as the version file keeps them
	plan  *muster.Plan // the plan file, parsed and validated
	event muster.Event // PlanAdopted; Plan names the version file
	// seq is the journal's last line the adoption was decided on: a
	// journal that grew meanwhile is decided again by a new resume.
	seq int64
}

// planAdoption compares the plan file (--plan, else the one the run
// started with) with the run's newest copy. Equal (in canonical form):
// nil, and nothing said. Different: with --keep-plan a notice and nil;
// otherwise the file is validated as run validates a plan, the edits are
// checked against what the run did (a task removed, a settled task
// changed, a new task named as a delegated one: refused, exit 2, every
// problem at once as FILE:LINE), and what is adopted is said task by
// task. Nothing is written here: the version file is written once the
// run's lock is held (Session.open).
func planAdoption(ctx context.Context, io *cmdutil.IOStreams, repo *cmdutil.Repo, id string, events []muster.Event, st *engine.State, cfg *muster.Config, f *preflight.Flags) (*adoption, error) {
	if !f.AdoptPlan {
		return nil, nil
	}
	dir := repo.RunDir(id)
	copyPath := cmdutil.NewestPlanCopy(dir, events)
	path := f.PlanFile
	if path == "" {
		path = st.Plan
	}
	if path == "" || copyPath == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if f.PlanFile != "" {
			return nil, cmdutil.Invalid("--plan %s: %w", path, err)
		}
		fmt.Fprintf(io.ErrOut, "note: the run's plan file %s cannot be read, so the run goes on with its copy %s (--plan FILE names another)\n", path, copyPath)
		return nil, nil
	}
	cp, err := planfile.Load(copyPath)
	if err != nil {
		fmt.Fprintf(io.ErrOut, "warning: the run's copy of the plan %s does not load, so %s is not compared with it: %v\n", copyPath, path, err)
		return nil, nil
	}
	canon := runCanon(events)
	// Equal in the newest canonical form (which sees every key): nothing
	// to say. The version is recorded with the run's own form.
	if cur, err := planfile.Load(path); err == nil && planfile.Hash(cur) == planfile.Hash(cp) {
		return nil, nil
	}
	if f.KeepPlan {
		fmt.Fprintf(io.ErrOut, "note: %s differs from the run's copy %s; --keep-plan: the run goes on with the copy\n", path, filepath.Base(copyPath))
		return nil, nil
	}
	plan, probs, err := preflight.Preflight(ctx, repo, path, cfg, f.Strict)
	if err != nil {
		return nil, err
	}
	preflight.PrintProblems(io.ErrOut, probs)
	if len(probs.Errors()) > 0 {
		return nil, &cmdutil.Silent{Err: probs.Errors()}
	}
	changed, lines, refused := diffPlan(st, cp, plan, path)
	if len(refused) > 0 {
		preflight.PrintProblems(io.ErrOut, refused)
		return nil, &cmdutil.Silent{Err: refused}
	}
	if planfile.BriefChanged(cp, plan) {
		lines = append(lines, "the brief: changed (every prompt from now on)")
	}
	if len(lines) == 0 {
		return nil, nil // only [x] marks on succeeded tasks
	}
	n := 2
	for _, e := range events {
		if e.Type == muster.EvPlanAdopted {
			n++
		}
	}
	name := cmdutil.PlanVersionName(cmdutil.PlanCopy(dir), n)
	fmt.Fprintf(io.ErrOut, "%s differs from the run's copy %s: adopting it as %s for the tasks that have not succeeded:\n", path, filepath.Base(copyPath), name)
	for _, l := range lines {
		fmt.Fprintf(io.ErrOut, "  %s\n", textsafe.Sanitize(l))
	}
	ev := muster.Event{Type: muster.EvPlanAdopted, Plan: name, PlanHash: hashAt(plan, canon), Canon: canon, Tasks: changed,
		Message: strings.Join(lines, "; ")}
	return &adoption{data: data, plan: plan, event: ev, seq: st.LastSeq}, nil
}

// diffPlan compares the plan file's tasks with the run's copy and what
// the run did: the tasks to adopt (changed ones that have not settled,
// and new ones), a line for people per task, and what cannot be adopted.
func diffPlan(st *engine.State, cp, plan *muster.Plan, path string) (changed []*muster.Task, lines []string, refused muster.Problems) {
	for _, ot := range cp.Tasks {
		if plan.Task(ot.ID) == nil {
			refused = append(refused, muster.Problem{File: cp.Source, Line: ot.Line, Message: fmt.Sprintf(
				"task %s is not in %s any more: a resume cannot remove a task of the run; put it back (or run `muster resume --keep-plan`), or start a new run with `muster run %s`", ot.ID, path, path)})
		}
	}
	for _, nt := range plan.Tasks {
		ot := cp.Task(nt.ID)
		if ot == nil {
			if t := st.Tasks[nt.ID]; t != nil {
				refused = append(refused, muster.Problem{File: path, Line: nt.Line, Message: fmt.Sprintf(
					"task %s: the run has a task of that ID already (delegated by %s): give the new task another ID", nt.ID, t.Task.Parent)})
				continue
			}
			changed = append(changed, nt)
			lines = append(lines, fmt.Sprintf("%s: added", nt.ID))
			continue
		}
		ch := planfile.TaskChanges(ot, nt)
		switch {
		case len(ch) == 0:
			continue
		case st.Settled(nt.ID):
			if len(ch) == 1 && ch[0] == "[x]" && nt.Done {
				continue // marking a finished task done changes nothing
			}
			refused = append(refused, muster.Problem{File: path, Line: nt.Line, Message: settledMessage(st, nt, ch, path)})
			continue
		case slices.Contains(ch, "[x]"):
			refused = append(refused, muster.Problem{File: path, Line: nt.Line, Message: fmt.Sprintf(
				"task %s has not succeeded in this run: a resume does not take a [x] mark for it; leave it unmarked, or start a new run with `muster run %s`", nt.ID, path)})
			continue
		}
		changed = append(changed, nt)
		lines = append(lines, fmt.Sprintf("%s: %s", nt.ID, strings.Join(ch, ", ")))
	}
	return changed, lines, refused
}

// settledMessage says why an edit of a task the run finished is refused.
func settledMessage(st *engine.State, t *muster.Task, ch []string, path string) string {
	what := "succeeded in this run"
	if c := st.Tasks[t.ID].Commit; c != "" {
		what += " (commit " + textsafe.Short(c) + ")"
	}
	why := "its " + strings.Join(ch, ", ") + " cannot change now"
	if slices.Contains(ch, "After") {
		why = "its After cannot change: it ran after what it named then, and cannot wait for a task that is new or has not succeeded"
	}
	return fmt.Sprintf("task %s %s: %s; a resume adopts edits only for tasks that have not succeeded: undo the edit (or run `muster resume --keep-plan`), or start a new run with `muster run %s`",
		t.ID, what, why, path)
}

// runCanon is the version of the canonical form the run hashes its plan
// with (its TasksPlanned; 1 in journals older than the field).
func runCanon(events []muster.Event) int {
	for _, e := range events {
		if e.Type == muster.EvTasksPlanned && e.Task == "" {
			if e.Canon == 0 {
				return 1
			}
			return e.Canon
		}
	}
	return planfile.CanonicalVersion
}

func hashAt(p *muster.Plan, canon int) string {
	h, err := planfile.HashAt(p, canon)
	if err != nil {
		return ""
	}
	return h
}

// writeVersion writes the adopted version's file into the run directory
// (synced, renamed into place), once the run's lock is held and its
// journal is where the adoption was decided.
func (a *adoption) writeVersion(dir string, lastSeq int64) error {
	if lastSeq != a.seq {
		return cmdutil.Env("the run's journal grew while this resume read the plan: run muster resume again")
	}
	p, ok := cmdutil.PlanVersionPath(dir, a.event.Plan)
	if !ok {
		return cmdutil.Env("plan version name %q", a.event.Plan)
	}
	if err := fsync.WriteFile(p, a.data, 0o644); err != nil {
		return cmdutil.Env("keep the adopted plan: %w", err)
	}
	return nil
}

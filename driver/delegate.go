package driver

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
)

// planOutFile is the file in a delegating coder's out/ that it writes
// its new tasks to (MUSTER_PLAN_OUT); maxPlanOut bounds it.
const (
	planOutFile = "plan-out.md"
	maxPlanOut  = 1 << 20
)

// errJournal marks a splice that validated but could not be recorded.
var errJournal = errors.New("journal")

// planFragment validates the new tasks of a delegating task and plans
// them (a TasksPlanned event with Task = the delegator), on the loop
// goroutine. The new tasks wait for the delegator, so they start only
// once it has succeeded; if it fails they are skipped with it.
func (d *Driver) planFragment(r *spliceRequest) error {
	if d.opts.Fragment == nil {
		return nil
	}
	// Tasks an earlier attempt of the same delegator planned are not in
	// the way: planning them again keeps the first plan of each.
	existing := make([]*muster.Task, 0, len(d.state.Order))
	for _, id := range d.state.Order {
		if t := d.state.Tasks[id].Task; t.Parent != r.parent.ID {
			existing = append(existing, t)
		}
	}
	data, err := exchange.ReadFile(r.dir, planOutFile, maxPlanOut)
	if err != nil || len(strings.TrimSpace(string(data))) == 0 {
		return err
	}
	tasks, err := d.opts.Fragment(r.parent, filepath.Join(r.dir, planOutFile), data, existing)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return nil
	}
	planned := 0 // the plan's own tasks, without any delegated one
	for _, id := range d.state.Order {
		if d.state.Tasks[id].Task.Parent == "" {
			planned++
		}
	}
	if limit := d.state.Config.MaxTasksFor(planned); len(existing)+len(tasks) > limit {
		return fmt.Errorf("%d new tasks would make the run %d tasks: the cap on a run's tasks is %d ([run] max_tasks; by default 10 times the plan's %d tasks, at least %d)",
			len(tasks), len(existing)+len(tasks), limit, planned, muster.DefaultMinMaxTasks)
	}
	for _, t := range tasks {
		d.redactTask(t)
	}
	if err := d.emit(muster.Event{Type: muster.EvTasksPlanned, Task: r.parent.ID, Tasks: tasks}); err != nil {
		return errors.Join(errJournal, err)
	}
	return nil
}

// splice hands the loop the tasks the attempt's agent wrote to its
// plan-out file; it returns why they were rejected ("" when accepted or
// there were none). When the journal failed, the attempt ends without
// landing its commit (the run stops; a resume runs the task again).
func (w *worker) splice() string {
	if !w.task.Delegates || w.planOut == "" {
		return ""
	}
	reply := make(chan error, 1)
	w.d.msgs <- message{splice: &spliceRequest{parent: w.task, dir: w.planOut, reply: reply}}
	err := <-reply
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errJournal):
		return "delegated tasks not recorded: the journal failed"
	}
	return "delegated tasks rejected: " + strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}

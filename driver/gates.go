package driver

import (
	"context"
	"fmt"
	"strings"

	"github.com/muster-run/muster"
)

// gates runs the plan-wide gates and the task's own. It returns feedback
// for the coder and a failure reason when one fails.
func (w *worker) gates(ctx context.Context, round int) (feedback, failed string) {
	if w.d.opts.Gates == nil {
		return "", ""
	}
	var specs []muster.GateSpec
	specs = append(specs, w.cfg.Gates...)
	for i, g := range w.task.Gates {
		specs = append(specs, muster.GateSpec{Name: fmt.Sprintf("%s/gate%d", w.task.ID, i+1), Command: g})
	}
	if len(specs) == 0 {
		return "", ""
	}
	w.send(muster.Event{Type: muster.EvPhase, Phase: "gates", Round: round})
	var fb []string
	for _, g := range specs {
		r := w.d.opts.Gates.Run(ctx, w.dir, g, w.cfg.Run.GateTimeout)
		passed := r.Passed
		w.send(muster.Event{Type: muster.EvGateRan, Gate: g.Name, Passed: &passed, Output: tail(r.Output, maxGateOutput), Round: round})
		if !r.Passed {
			fb = append(fb, fmt.Sprintf("Gate %q (%s) failed:\n%s", g.Name, g.Command, tail(r.Output, maxFeedback/2)))
			if failed == "" {
				failed = fmt.Sprintf("gate %s failed: %s", g.Name, lastLines(r.Output, 1))
			}
		}
	}
	return strings.Join(fb, "\n\n"), failed
}

package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/muster-run/muster"
)

// applyJoined folds an ExecutorJoined: the executor a fleet worker
// brought mid-run joins the crew (a name the crew has already is left as
// it is: a local executor keeps its name, and the first worker's spec of
// a fleet one stands). The config is copied, not changed in place: the
// RunStarted's config may be shared with whoever built it.
func (s *State) applyJoined(e *muster.Event) {
	if s.Config == nil || e.Spec == nil || e.Spec.Name == "" || s.Config.Executor(e.Spec.Name) != nil {
		return
	}
	cfg := *s.Config
	spec := *e.Spec
	spec.Fleet = true
	cfg.Executors = append(slices.Clip(cfg.Executors), &spec)
	s.Config = &cfg
}

// unserved lists the ready tasks no executor of the crew may ever run
// (the executor they name, or any of their role and model, is not in
// it), in priority order.
func (s *State) unserved() []muster.TaskID {
	var out []muster.TaskID
	for _, id := range s.ready {
		t := s.Tasks[id].Task
		if t.EffectiveKind() == muster.KindCode {
			continue
		}
		served := false
		for _, e := range s.Config.Executors {
			if (t.Executor == "" && e.HasRole(t.EffectiveRole()) || t.Executor == e.Name) && e.OffersModel(t.Model) {
				served = true
				break
			}
		}
		if !served {
			out = append(out, id)
		}
	}
	return out
}

// AwaitingJoin maps each ready task of a fleet run that no executor of
// the crew can run to what it waits for ("executor gpu"): a worker
// serving it to join (muster status says so). Nil without a fleet.
func (s *State) AwaitingJoin() map[muster.TaskID]string {
	if s.Config == nil || s.Config.Fleet.NATS == "" {
		return nil
	}
	out := map[muster.TaskID]string{}
	for _, id := range s.unserved() {
		out[id] = s.needs(s.Tasks[id].Task)
	}
	return out
}

// awaitingJoin is a fleet run's wait for its crew to grow: when nothing
// runs and nothing can start but ready tasks no executor of the crew can
// run, the run waits [fleet] join_wait from its latest event (a Warning
// aside) for a worker serving one to join (an ExecutorJoined), then
// skips them (stuck). It returns when to ask again and, for people, what
// the run waits for; a zero time when it does not wait.
func (s *State) awaitingJoin(now time.Time) (time.Time, string) {
	if s.Config.Fleet.NATS == "" {
		return time.Time{}, ""
	}
	ids := s.unserved()
	if len(ids) == 0 {
		return time.Time{}, ""
	}
	wait := s.Config.Fleet.JoinWaitOrDefault()
	until := s.progress.Add(wait)
	if s.progress.IsZero() || !now.Before(until) {
		return time.Time{}, ""
	}
	t := s.Tasks[ids[0]].Task
	more := ""
	if len(ids) > 1 {
		more = fmt.Sprintf(" (and %d more tasks)", len(ids)-1)
	}
	return until, fmt.Sprintf("task %s%s waits for a fleet worker serving %s to join: until %s ([fleet] join_wait %s), then it is skipped",
		t.ID, more, s.needs(t), until.UTC().Format(time.TimeOnly+" MST"), wait)
}

// joinWaitPassed is the end of a stuck task's reason in a fleet run.
func (s *State) joinWaitPassed() string {
	if s.Config.Fleet.NATS == "" {
		return ""
	}
	return fmt.Sprintf("; no fleet worker serving it joined within [fleet] join_wait (%s)", s.Config.Fleet.JoinWaitOrDefault())
}

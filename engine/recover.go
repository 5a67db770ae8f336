package engine

import (
	"sort"

	"github.com/muster-run/muster"
)

// Orphan is work the journal says was under way when the process that
// drove the run stopped: a lease never released, or an attempt never ended.
type Orphan struct {
	Lease   Lease
	Running bool // the lease's task is still marked running
	// PID is the agent process last started on the slot (0: none known);
	// it leads its own process group. Proc is its full identity.
	PID  int
	Proc muster.Process
}

// Orphans returns the leases still held, in slot order. After a crash the
// driver cancels each running task ("interrupted"), resets its worktree,
// kills what survived of its process, and releases the lease, before it
// starts anything new. Recovery never starts an attempt twice: an attempt
// is either ended by an event in the journal or cancelled here.
func Orphans(s *State) []Orphan {
	slots := make([]string, 0, len(s.Leases))
	for slot := range s.Leases {
		slots = append(slots, slot)
	}
	sort.Strings(slots)
	var out []Orphan
	found := map[muster.TaskID]bool{}
	for _, slot := range slots {
		l := s.Leases[slot]
		t := s.Tasks[l.Task]
		running := t != nil && t.State == muster.StateRunning && l.Role != muster.RoleReviewer
		found[l.Task] = found[l.Task] || running
		out = append(out, Orphan{Lease: l, Running: running, PID: s.Procs[slot].PID, Proc: s.Procs[slot]})
	}
	// Tasks marked running without a lease of their own are orphans too:
	// a journal cut between the two events, or a commit waiting for
	// integration, whose clone went back to the crew (and may be another
	// task's now).
	for _, id := range s.Order {
		t := s.Tasks[id]
		if t.State != muster.StateRunning || found[id] {
			continue
		}
		if l, held := s.Leases[muster.Slot(t.Executor, t.Clone)]; !held || l.Task != id {
			p := s.Procs[muster.Slot(t.Executor, t.Clone)]
			out = append(out, Orphan{Lease: Lease{Task: id, Executor: t.Executor, Clone: t.Clone}, Running: true, PID: p.PID, Proc: p})
		}
	}
	return out
}

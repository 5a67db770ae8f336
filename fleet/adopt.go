package fleet

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
)

// orphan is a job of the run's earlier generation (an orchestrator that
// was killed) whose lease that orchestrator recorded: the worker keeps it
// running for the job's run_ttl, and the resumed run adopts it when it
// asks for the same work (adopt), else cancels it.
type orphan struct {
	job    *Job
	holder string
	clone  int
	// seen is the highest events-stream sequence of the task the journal
	// holds: reports up to it were taken before the crash.
	seen uint64
	// buf holds the job's reports read before an invocation adopts it.
	buf []Report
}

// maxOrphanReports bounds the reports kept for a job not adopted yet.
const maxOrphanReports = 1024

// sentJob is what the orchestrator keeps of a job it sent, in its own
// scratch directory, for a resume to adopt it: the job, and the clone of
// the lease it accepted.
type sentJob struct {
	Job   *Job `json:"job"`
	Clone int  `json:"clone,omitempty"`
}

func (d *Dispatcher) jobFile(id string) string { return filepath.Join(d.scratch, "jobs", id+".json") }

// keep writes what a resume needs to adopt the job (best effort: a job
// it cannot read is cancelled, and runs again).
func (d *Dispatcher) keep(job *Job, clone int) {
	b, err := json.Marshal(sentJob{Job: job, Clone: clone})
	if err != nil {
		return
	}
	_ = exchange.WriteFile(filepath.Join(d.scratch, "jobs"), job.ID+".json", b, 0o600)
}

// collectOrphans reads the leases the run's earlier generation recorded:
// a coder's first round whose task's reports the journal holds (seen) is
// kept for adoption; any other job is cancelled at once.
func (d *Dispatcher) collectOrphans(ctx context.Context, seen map[muster.TaskID]uint64) error {
	if err := os.MkdirAll(filepath.Join(d.scratch, "jobs"), 0o700); err != nil {
		return err
	}
	keys, err := d.conn.Leases.ListKeysFiltered(ctx, d.run+".*")
	if err != nil {
		return err
	}
	var ids []string
	for k := range keys.Keys() {
		if id := strings.TrimPrefix(k, d.run+"."); id != k && id != "gen" && !strings.Contains(id, ".") {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		e, err := d.conn.Leases.Get(ctx, leaseKey(d.run, id))
		if err != nil {
			continue
		}
		holder := string(e.Value())
		if holder == "" || holder == LeaseDone || holder == LeaseCancel {
			continue
		}
		var sj sentJob
		b, err := os.ReadFile(d.jobFile(id))
		if err == nil {
			err = json.Unmarshal(b, &sj)
		}
		if err != nil || sj.Job == nil || sj.Job.Task == nil || sj.Job.ID != id || sj.Job.Role != muster.RoleCoder || sj.Job.Round != 0 || seen[sj.Job.Task.ID] == 0 {
			_, _ = d.conn.Leases.Put(ctx, leaseKey(d.run, id), []byte(LeaseCancel))
			continue
		}
		d.orphans[id] = &orphan{job: sj.Job, holder: holder, clone: sj.Clone, seen: seen[sj.Job.Task.ID]}
	}
	return nil
}

// replayFrom is the events-stream sequence a resumed run reads from: just
// after the lowest of its orphans' seen (0: only new events).
func (d *Dispatcher) replayFrom() uint64 {
	var from uint64
	for _, o := range d.orphans {
		if from == 0 || o.seen+1 < from {
			from = o.seen + 1
		}
	}
	return from
}

// hold keeps a report of an orphan until an invocation adopts it; it
// reports whether the report was an orphan's. Reports the journal
// already holds are dropped. Called with d.mu held.
func (d *Dispatcher) hold(r Report) bool {
	o := d.orphans[r.Job]
	if o == nil {
		return false
	}
	if r.streamSeq > o.seen && len(o.buf) < maxOrphanReports {
		o.buf = append(o.buf, r)
	}
	return true
}

// adopt takes over the orphan that does the work req asks for, if any:
// a coder's first round of the same task on the same executor. Its lease
// stays the one the earlier generation accepted; the reports it sent
// meanwhile (its result among them) are the new invocation's.
func (d *Dispatcher) adopt(req *muster.ExecRequest, executor, dir string) (*pending, muster.Record) {
	if req.Role != muster.RoleCoder || req.Round != 0 || req.Task == nil {
		return nil, muster.Record{}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, o := range d.orphans {
		j := o.job
		if j.Task.ID != req.Task.ID || j.Executor != executor {
			continue
		}
		delete(d.orphans, id)
		msg, _ := epoch(o.holder)
		// Whether the holder lives is not known yet (its reports since the
		// crash come first): a newer delivery's claim may take the lease
		// unless the holder says it still works on the job.
		p := &pending{job: j, dir: dir, ch: make(chan Report, 1024+len(o.buf)), done: make(chan struct{}), seen: map[string]bool{},
			holder: o.holder, msgSeq: msg}
		for _, r := range o.buf {
			p.ch <- r
		}
		d.jobs[id] = p
		name, _, _ := strings.Cut(o.holder, "/")
		return p, muster.Record{Type: muster.RecWorker, Worker: name, WorkerClone: o.clone}
	}
	return nil, muster.Record{}
}

// cancelOrphans cancels the jobs no invocation adopted (those of task
// when it is not empty: an invocation of the task that adopted none of
// them), and their workers stop them at their next lease check.
func (d *Dispatcher) cancelOrphans(task muster.TaskID) {
	d.mu.Lock()
	var ids []string
	for id, o := range d.orphans {
		if task == "" || o.job.Task.ID == task {
			ids = append(ids, id)
			delete(d.orphans, id)
		}
	}
	d.mu.Unlock()
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(d.base, 5*time.Second)
		_, _ = d.conn.Leases.Put(ctx, leaseKey(d.run, id), []byte(LeaseCancel))
		cancel()
	}
}

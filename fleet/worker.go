package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/muster-run/muster"
	"github.com/muster-run/muster/internal/exchange"
)

// Host is a worker's git side (git.Host): one object store per
// repository, one clone per executor clone.
type Host interface {
	Has(ctx context.Context, repo, commit string) bool
	Tips(ctx context.Context, repo string) []string
	Receive(ctx context.Context, repo, bundle string) (string, error)
	Checkout(ctx context.Context, repo, executor string, n int, commit string) (string, error)
	Result(ctx context.Context, repo, executor string, n int, start, out string) (commit string, changed bool, err error)
}

// DefaultLease is a worker's lease on a job: the ack wait of the task
// consumer, renewed by in-progress acks while the agent works.
const DefaultLease = 30 * time.Second

// WorkerOptions configure a worker.
type WorkerOptions struct {
	Name    string
	Version string
	Conn    *Conn
	// Specs are the executors served; Executors their adapters by name.
	Specs     []*muster.ExecutorSpec
	Executors map[string]muster.Executor
	// Gates runs the jobs' gates in the clones (nil: none run).
	Gates muster.GateRunner
	// Setup runs the jobs' [setup] steps in the clones (nil: Gates).
	Setup   muster.GateRunner
	Host    Host
	Scratch string
	Lease   time.Duration
	// Log gets one line per job taken and ended.
	Log io.Writer
	// Confine, when set, confines every agent as a local run does (the
	// worker's credentials, its other clones and its cache already
	// hidden in it); each invocation may write its clone and its own
	// directories besides. nil: agents run unconfined.
	Confine *muster.Confinement
}

// errStale cancels a job whose lease went to someone else, or whose run
// moved on (done, cancelled, resumed).
var errStale = errors.New("stale: the job's lease is no longer this worker's")

// errHandback cancels a job because the worker stops.
var errHandback = errors.New("handed back: the worker is stopping")

// Worker serves its executors' clones to the fleet.
type Worker struct {
	o     WorkerOptions
	start time.Time

	mu    sync.Mutex // guards doing and absent
	doing map[string]map[int]Doing
	// absent is when this worker first saw each run's presence lapsed.
	absent map[string]time.Time
	logMu  sync.Mutex
}

// NewWorker checks the options and returns a worker.
func NewWorker(o WorkerOptions) (*Worker, error) {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if len(o.Specs) == 0 {
		return nil, &muster.Error{Code: muster.CodeInvalid, Message: "the worker's config has no executors: add [executors.NAME] tables (see docs/fleet.md)"}
	}
	return &Worker{o: o, start: time.Now().UTC(), doing: map[string]map[int]Doing{}, absent: map[string]time.Time{}}, nil
}

func (w *Worker) logf(format string, args ...any) {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	fmt.Fprintf(w.o.Log, time.Now().UTC().Format("15:04:05 ")+format+"\n", args...)
}

// Run registers the worker, takes jobs until ctx ends, hands back what
// it holds, and unregisters. It returns nil on a clean stop.
func (w *Worker) Run(ctx context.Context) error {
	bg := context.WithoutCancel(ctx)
	if err := w.o.Conn.Register(bg, w.registration(false)); err != nil {
		return &muster.Error{Code: muster.CodeInternal, Message: "register with the fleet: " + err.Error()}
	}
	var wg sync.WaitGroup
	hbCtx, stopHB := context.WithCancel(bg)
	wg.Add(1)
	go func() { // heartbeats: until every clone loop has returned
		defer wg.Done()
		t := time.NewTicker(HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
				_ = w.o.Conn.Register(bg, w.registration(ctx.Err() != nil))
			}
		}
	}()
	var loops sync.WaitGroup
	for _, spec := range w.o.Specs {
		cons, err := w.consumer(bg, spec.Name)
		if err != nil {
			stopHB()
			wg.Wait()
			return &muster.Error{Code: muster.CodeInternal, Message: fmt.Sprintf("executor %s: task consumer: %v", spec.Name, err)}
		}
		for n := 1; n <= max(spec.Clones, 1); n++ {
			loops.Add(1)
			go func() { // one clone: takes a job only while it is free
				defer loops.Done()
				w.cloneLoop(ctx, spec, n, cons)
			}()
		}
	}
	w.logf("worker %s: serving %d executor(s)", w.o.Name, len(w.o.Specs))
	loops.Wait()
	stopHB()
	wg.Wait()
	_ = w.o.Conn.Unregister(bg, w.o.Name)
	if c, ok := w.o.Host.(io.Closer); ok {
		_ = c.Close() // its long-lived git helpers
	}
	return nil
}

// consumer returns the durable consumer of an executor's tasks, shared
// by every worker that serves it.
func (w *Worker) consumer(ctx context.Context, executor string) (jetstream.Consumer, error) {
	l := w.o.Lease
	return w.o.Conn.JS.CreateOrUpdateConsumer(ctx, TasksStream, jetstream.ConsumerConfig{
		Durable:       consumerName(executor),
		FilterSubject: taskFilter(executor),
		AckPolicy:     jetstream.AckExplicitPolicy,
		// Redeliveries are bounded, each lease longer than the last.
		MaxDeliver: 6,
		BackOff:    []time.Duration{l, l, 2 * l, 2 * l, 4 * l},
		MaxWaiting: 4096,
	})
}

func (w *Worker) cloneLoop(ctx context.Context, spec *muster.ExecutorSpec, n int, cons jetstream.Consumer) {
	for ctx.Err() == nil {
		msg, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) && ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		if ctx.Err() != nil {
			_ = msg.Nak() // taken as the worker stops: straight back
			return
		}
		w.handle(ctx, spec, n, msg)
	}
}

// handle runs one delivered job under its lease.
func (w *Worker) handle(stop context.Context, spec *muster.ExecutorSpec, n int, msg jetstream.Msg) {
	bg := context.WithoutCancel(stop)
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Term()
		return
	}
	var job Job
	if err := json.Unmarshal(msg.Data(), &job); err != nil || job.ID == "" || job.Task == nil {
		_ = msg.TermWithReason("malformed job")
		return
	}
	delivery, seq := meta.NumDelivered, meta.Sequence.Stream
	me := (&Report{Worker: w.o.Name, Msg: seq, Delivery: delivery}).holder()
	if why, _ := w.stale(bg, &job, me); why != "" {
		_ = msg.Ack() // done, cancelled or of an earlier generation: nothing to do
		return
	}
	if slices.Contains(job.NotOn, w.o.Name) {
		_ = msg.NakWithDelay(w.o.Lease) // another worker's to take
		return
	}
	rep := func(r Report) error {
		r.Job, r.Task, r.Attempt, r.Worker, r.Msg, r.Delivery, r.Clone, r.Nonce = job.ID, job.Task.ID, job.Attempt, w.o.Name, seq, delivery, n, job.Nonce
		return w.publish(bg, &job, r)
	}
	if err := rep(Report{Kind: RepClaim}); err != nil {
		_ = msg.NakWithDelay(time.Second)
		return
	}
	w.setDoing(spec.Name, n, &Doing{Clone: n, Run: job.Run, Task: job.Task.ID, Attempt: job.Attempt, Round: job.Round, Role: job.Role})
	defer w.setDoing(spec.Name, n, nil)
	w.logf("%s#%d: took %s/%s attempt %d round %d (delivery %d)", spec.Name, n, job.Run, job.Task.ID, job.Attempt, job.Round, delivery)

	jctx, cancel := context.WithCancelCause(bg)
	defer cancel(nil)
	keeperDone := make(chan struct{})
	go func() { // the lease: renewed while the job runs, watched for staleness
		defer close(keeperDone)
		t := time.NewTicker(min(w.o.Lease/4, 5*time.Second))
		defer t.Stop()
		for {
			select {
			case <-jctx.Done():
				return
			case <-stop.Done():
				cancel(errHandback)
				return
			case <-t.C:
				_ = msg.InProgress()
				_ = rep(Report{Kind: RepAlive, Seq: int(time.Now().UnixMilli())})
				if why, _ := w.stale(bg, &job, me); why != "" {
					cancel(fmt.Errorf("%w (%s)", errStale, why))
					return
				}
			}
		}
	}()
	result := w.run(jctx, spec, n, &job, seq, delivery, rep)
	cancel(nil)
	<-keeperDone
	switch cause := context.Cause(jctx); {
	case errors.Is(cause, errHandback):
		_ = rep(Report{Kind: RepHandback})
		_ = msg.Nak()
		w.logf("%s#%d: handed back %s/%s", spec.Name, n, job.Run, job.Task.ID)
		return
	case errors.Is(cause, errStale):
		w.logf("%s#%d: dropped %s/%s: %v", spec.Name, n, job.Run, job.Task.ID, cause)
		w.ackStale(bg, &job, me, msg)
		return
	}
	if why, _ := w.stale(bg, &job, me); why != "" {
		w.logf("%s#%d: dropped %s/%s at its end: %s", spec.Name, n, job.Run, job.Task.ID, why)
		w.ackStale(bg, &job, me, msg)
		return
	}
	if err := rep(result); err != nil {
		_ = msg.NakWithDelay(time.Second)
		return
	}
	_ = msg.Ack()
	w.logf("%s#%d: finished %s/%s", spec.Name, n, job.Run, job.Task.ID)
}

// ackStale removes a stale job's message from the queue when nobody
// else holds it (done, cancelled, an earlier generation's). A message
// whose lease went to another delivery is not acked: the ack could count
// against that delivery (nats-server#4786).
func (w *Worker) ackStale(ctx context.Context, job *Job, me string, msg jetstream.Msg) {
	if _, ack := w.stale(ctx, job, me); ack {
		_ = msg.Ack()
	}
}

// stale says why the job is no longer this lease's to run ("" while it
// is), and whether its message may be acked (nobody else holds it). A
// lease recorded for an older delivery of the job is no reason: this
// delivery supersedes it once the orchestrator takes its claim. A job of
// an earlier generation (its orchestrator was resumed) goes on when the
// old orchestrator recorded its lease: the resumed one adopts it, or
// cancels it.
func (w *Worker) stale(ctx context.Context, job *Job, me string) (why string, ack bool) {
	lease := ""
	if e, err := w.o.Conn.Leases.Get(ctx, leaseKey(job.Run, job.ID)); err == nil {
		lease = string(e.Value())
	}
	switch lease {
	case LeaseDone, LeaseCancel:
		return "the job is " + lease, true
	case "":
		if e, err := w.o.Conn.Leases.Get(ctx, genKey(job.Run)); err == nil {
			if g, _ := strconv.ParseInt(string(e.Value()), 10, 64); g > job.Gen {
				return "the run was resumed", true
			}
		}
	}
	if w.gone(ctx, job) {
		return "the run's orchestrator is gone", true
	}
	if lease != "" && lease != me && epochAfter(lease, me) {
		return "the lease went to " + lease, false
	}
	return "", false
}

// gone reports whether the job's run has had no orchestrator for the
// job's run_ttl: its presence lapsed that long ago (as this worker saw
// it), and no resume came to adopt the job.
func (w *Worker) gone(ctx context.Context, job *Job) bool {
	_, err := w.o.Conn.Runs.Get(ctx, runKey(job.Run))
	absent := errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !absent {
		delete(w.absent, job.Run)
		return false
	}
	since, ok := w.absent[job.Run]
	if !ok {
		since = time.Now()
		w.absent[job.Run] = since
	}
	return time.Since(since) >= job.RunTTL
}

// epochAfter reports whether lease a ("worker/msg.delivery") is of a
// later delivery than lease b.
func epochAfter(a, b string) bool {
	am, ad := epoch(a)
	bm, bd := epoch(b)
	return am > bm || am == bm && ad > bd
}

func epoch(holder string) (msg, delivery uint64) {
	_, e, _ := strings.Cut(holder, "/")
	ms, ds, _ := strings.Cut(e, ".")
	msg, _ = strconv.ParseUint(ms, 10, 64)
	delivery, _ = strconv.ParseUint(ds, 10, 64)
	return msg, delivery
}

func (w *Worker) publish(ctx context.Context, job *Job, r Report) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("%s.%s.%d.%d.%s.%d", job.ID, r.Worker, r.Msg, r.Delivery, r.Kind, r.Seq)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = w.o.Conn.JS.Publish(ctx, eventSubject(token(job.Run), w.o.Name, job.ID), data, jetstream.WithMsgID(id))
	return err
}

// run does the job in clone n and returns its result report.
func (w *Worker) run(ctx context.Context, spec *muster.ExecutorSpec, n int, job *Job, seq, delivery uint64, rep func(Report) error) Report {
	fail := func(format string, args ...any) Report {
		return Report{Kind: RepResult, Fail: fmt.Sprintf(format, args...)}
	}
	exec := w.o.Executors[job.Executor]
	if exec == nil || job.Executor != spec.Name {
		return fail("worker %s does not serve executor %q", w.o.Name, job.Executor)
	}
	scratch := filepath.Join(w.o.Scratch, fmt.Sprintf("%s-%d-%d", job.ID, seq, delivery))
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return fail("scratch: %v", err)
	}
	defer os.RemoveAll(scratch)
	if err := w.fetchStart(ctx, job, scratch); err != nil {
		return fail("get the code: %v", err)
	}
	dir, err := w.o.Host.Checkout(ctx, job.Repo, spec.Name, n, job.Start)
	if err != nil {
		return fail("check out %s: %v", job.Start, err)
	}
	if st, r := w.setupClone(ctx, dir, job); st != nil {
		return fail("setup %s (%s) failed on the job's start commit (exit %d): %s", st.Name, st.Command, r.ExitCode, r.Output)
	}
	req := &muster.ExecRequest{
		Run: job.Run, Task: job.Task, Role: job.Role, Spec: spec, Clone: n, Attempt: job.Attempt, Round: job.Round,
		Dir: dir, Prompt: job.Prompt, Authority: job.Authority, Model: job.Model,
		SessionID: job.SessionID, Timeout: job.Timeout, Grace: job.Grace, Stall: job.Stall, BudgetLeft: job.budgetLeft(),
		Env: map[string]string{"MUSTER_FLEET_WORKER": w.o.Name},
	}
	if req.Timeout == 0 {
		req.Timeout = spec.Timeout
	}
	// The invocation's own directory (internal/exchange): prompt and diff
	// in its read-only in/, the plan read back from its out/.
	inv, err := exchange.New(scratch, "x", exchange.Options{})
	if err != nil {
		return fail("scratch: %v", err)
	}
	req.Scratch, req.Home = inv.Path, inv.Home
	req.Env["TMPDIR"] = inv.Tmp
	if req.PromptFile, err = inv.WriteIn("prompt.md", []byte(job.Prompt)); err != nil {
		return fail("prompt file: %v", err)
	}
	if job.Role == muster.RoleReviewer {
		if req.DiffFile, err = inv.WriteIn("change.diff", []byte(job.Diff)); err != nil {
			return fail("diff file: %v", err)
		}
	}
	if job.PlanOut {
		req.PlanOut = inv.OutFile("plan-out.md")
	}
	req.Confine = setupReadOnly(w.confinement(spec, job.Authority, dir, inv), job, dir)
	nrec := 0
	res, execErr := exec.Execute(ctx, req, func(r muster.Record) {
		if r.Type == muster.RecPID || r.Type == muster.RecWorker {
			return // this host's processes and names mean nothing to the orchestrator
		}
		nrec++
		rc := r
		_ = rep(Report{Kind: RepRecord, Seq: nrec, Record: &rc})
	})
	if ctx.Err() != nil {
		return fail("cancelled: %v", context.Cause(ctx))
	}
	out := Report{Kind: RepResult, Exec: res}
	var ae *muster.AgentError
	switch {
	case execErr == nil:
	case errors.As(execErr, &ae):
		out.Error = ae
	default:
		out.Fail = "agent: " + execErr.Error()
	}
	if job.PlanOut {
		if b, err := inv.ReadOut("plan-out.md", 1<<20); err == nil {
			out.Plan = string(b)
		}
	}
	if job.Role == muster.RoleReviewer || execErr != nil {
		return out
	}
	// The change is recorded before the gates run.
	bundle := filepath.Join(scratch, "result.bundle")
	commit, changed, err := w.o.Host.Result(ctx, job.Repo, spec.Name, n, job.Start, bundle)
	if err != nil {
		return fail("record the result: %v", err)
	}
	if changed {
		out.Commit = commit
		if err := w.sendBundle(bundle, &out, rep); err != nil {
			return fail("send the result: %v", err)
		}
	}
	// The gates run on the change just recorded; what they write (build
	// output, say) is not part of it, as a local task's commit is the
	// change its gates saw.
	if w.o.Gates != nil {
		out.Gates = w.gates(ctx, dir, job)
		if ctx.Err() != nil {
			return fail("cancelled: %v", context.Cause(ctx))
		}
	}

	return out
}

// confinement is what one invocation may write: the worker's Confine
// plus the invocation's own directories, the executor's writable paths
// and, unless it only reads, its clone (the driver's rule, on a worker).
func (w *Worker) confinement(spec *muster.ExecutorSpec, auth muster.Authority, dir string, inv *exchange.Dir) *muster.Confinement {
	c := w.o.Confine
	if c == nil {
		return nil
	}
	paths := inv.Writable()
	c = c.WithReadOnly(inv.Readable()...)
	if auth != muster.AuthorityRead {
		paths = append(paths, dir)
	} else {
		c = c.WithReadOnly(dir)
	}
	return c.With(append(paths, spec.Writable...)...)
}

// putFile stores the file at path as object name.
func putFile(ctx context.Context, os_ jetstream.ObjectStore, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = os_.Put(ctx, jetstream.ObjectMeta{Name: name}, f)
	return err
}

// fetchStart makes sure the host has the job's start commit, asking the
// orchestrator for a bundle of what it lacks.
func (w *Worker) fetchStart(ctx context.Context, job *Job, scratch string) error {
	if w.o.Host.Has(ctx, job.Repo, job.Start) {
		return nil
	}
	req, _ := json.Marshal(BundleRequest{Job: job.ID, Worker: w.o.Name, Nonce: job.Nonce, Want: job.Start, Have: w.o.Host.Tips(ctx, job.Repo)})
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	m, err := w.askBundle(rctx, bundleSubject(token(job.Run)), req)
	if err != nil {
		return fmt.Errorf("ask for a bundle: %w", err)
	}
	var rep BundleReply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		return fmt.Errorf("bundle reply: %w", err)
	}
	if rep.Error != "" {
		return errors.New(rep.Error)
	}
	path := filepath.Join(scratch, "start.bundle")
	if len(rep.Data) > 0 {
		if err := os.WriteFile(path, rep.Data, 0o600); err != nil {
			return err
		}
	} else if err := w.o.Conn.Bundles.GetFile(rctx, rep.Object, path); err != nil {
		return fmt.Errorf("get bundle %s: %w", rep.Object, err)
	}
	defer os.Remove(path)
	tip, err := w.o.Host.Receive(ctx, job.Repo, path)
	if err != nil {
		return err
	}
	if tip != job.Start {
		return fmt.Errorf("the bundle holds %s, not %s", tip, job.Start)
	}
	return nil
}

func (w *Worker) setDoing(executor string, n int, d *Doing) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.doing[executor]
	if m == nil {
		m = map[int]Doing{}
		w.doing[executor] = m
	}
	if d == nil {
		delete(m, n)
	} else {
		m[n] = *d
	}
}

func (w *Worker) registration(stopping bool) *Registration {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := &Registration{Name: w.o.Name, Version: w.o.Version, Started: w.start, Stopping: stopping, LeaseS: w.o.Lease.Seconds()}
	for _, s := range w.o.Specs {
		es := ExecutorState{Name: s.Name, Kind: s.Kind, Roles: s.Roles, Clones: max(s.Clones, 1)}
		for n := 1; n <= es.Clones; n++ {
			if d, ok := w.doing[s.Name][n]; ok {
				es.Busy++
				es.Doing = append(es.Doing, d)
			}
		}
		r.Executors = append(r.Executors, es)
	}
	return r
}

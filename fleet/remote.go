package fleet

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
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
)

// Local is the orchestrator's git side of remote invocations, in the
// worktree of the driver's slot (package git's functions).
type Local interface {
	Head(ctx context.Context, dir string) (string, error)
	Snapshot(ctx context.Context, dir, parent string) (string, error)
	WriteBundle(ctx context.Context, dir, tip string, have []string, out string) error
	// ReadBundle stores a bundle's objects; it returns its commit and
	// that commit's parents.
	ReadBundle(ctx context.Context, dir, bundle string) (tip string, parents []string, err error)
	Apply(ctx context.Context, dir, from, to string) error
}

// maxPlan bounds a delegating task's plan file that comes back.
const maxPlan = 1 << 20

// Dispatcher sends a run's invocations to the fleet and takes back the
// results of the leases it accepts. One per run (orchestrator process).
type Dispatcher struct {
	conn    *Conn
	run     string
	runTok  string
	gen     int64
	repo    string
	local   Local
	scratch string
	lease   time.Duration
	// trustGates: see DispatchOptions.TrustGates.
	trustGates bool
	setup      []muster.SetupStep

	mu   sync.Mutex // guards jobs and stored
	jobs map[string]*pending
	// stored names the large bundles already in the object store.
	stored map[string]bool
	// producer is the worker whose change of a task was taken last: the
	// task's reviewers never run there.
	producer map[muster.TaskID]string

	// base is Open's context without its cancellation: bundle requests
	// run under it (with their own deadline).
	base     context.Context
	bundleMu sync.Mutex // serialises bundle creation
	sub      *nats.Subscription
	cc       jetstream.ConsumeContext
	// orphans are the earlier generation's jobs a resume may adopt
	// (adopt.go), until adoptEnd (the run's run_ttl) cancels the rest.
	orphans  map[string]*orphan
	adoptEnd *time.Timer
	runTTL   time.Duration
	// budgetLeft: see DispatchOptions.BudgetLeft.
	budgetLeft func() *muster.Budget
	// stopBeat ends the presence heartbeat; beatDone is closed after.
	stopBeat context.CancelFunc
	beatDone chan struct{}
}

// presenceEvery is how often the orchestrator says its run is alive.
const presenceEvery = PresenceTTL / 3

// pending is one job in flight. Reports reach it on ch, in stream order.
type pending struct {
	job *Job
	dir string
	ch  chan Report
	// done is closed when Execute returns: reports after it are dropped.
	done chan struct{}
	// holder is the lease accepted ("worker/msg.delivery"), seen the
	// records already taken (by holder and sequence).
	holder string
	seen   map[string]bool
	msgSeq uint64
	// lastSeen is when the holder last said it works on the job (or when
	// the job was sent); refused counts the Refused records.
	lastSeen time.Time
	refused  int
	// chunks is the result bundle being received in pieces (results.go).
	chunks *chunks
}

// DispatchOptions configure Open.
type DispatchOptions struct {
	Run string
	// Repo names the repository across machines (its root commit).
	Repo    string
	Local   Local
	Scratch string
	// Lease is the workers' lease, for the watchdog (default DefaultLease).
	Lease time.Duration
	// TrustGates takes the gate results workers report ([fleet]
	// trust_worker_gates); else the driver runs the task's gates again on
	// the returned change.
	TrustGates bool
	// Setup are the run's [setup] steps, sent with every coder's job.
	Setup []muster.SetupStep
	// Resume opens a resumed run: the jobs its earlier orchestrator left
	// running under a lease it recorded are adopted by the invocations
	// that ask for the same work, or cancelled. Seen is the highest
	// events-stream sequence the run's journal holds per task
	// (Event.FleetSeq): a task without one (a journal of an earlier
	// version) adopts nothing.
	Resume bool
	Seen   map[muster.TaskID]uint64
	// RunTTL is how long workers keep the run's jobs once its presence
	// lapses, and how long a resume keeps them for adoption ([fleet]
	// run_ttl; default muster.DefaultRunTTL).
	RunTTL time.Duration
	// BudgetLeft is what is left of the run's budget (nil: none), sent
	// with each job; nil func: none.
	BudgetLeft func() *muster.Budget
}

// Open starts a new generation of run on the fleet: work of earlier
// generations (an orchestrator that was killed) is dropped by workers
// when they see it, and its results are never taken.
func Open(ctx context.Context, c *Conn, o DispatchOptions) (*Dispatcher, error) {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.RunTTL <= 0 {
		o.RunTTL = muster.DefaultRunTTL
	}
	d := &Dispatcher{conn: c, run: o.Run, runTok: token(o.Run), repo: o.Repo, local: o.Local, scratch: o.Scratch, lease: o.Lease, trustGates: o.TrustGates, setup: o.Setup,
		jobs: map[string]*pending{}, stored: map[string]bool{}, producer: map[muster.TaskID]string{}, base: context.WithoutCancel(ctx),
		orphans: map[string]*orphan{}, runTTL: o.RunTTL, budgetLeft: o.BudgetLeft}
	if err := os.MkdirAll(filepath.Join(o.Scratch, "jobs"), 0o700); err != nil {
		return nil, err
	}
	if err := d.newGeneration(ctx); err != nil {
		return nil, err
	}
	if o.Resume {
		if err := d.collectOrphans(ctx, o.Seen); err != nil {
			return nil, fmt.Errorf("fleet: the jobs of the interrupted run: %w", err)
		}
	}
	cc := jetstream.OrderedConsumerConfig{FilterSubjects: []string{"muster.ev." + d.runTok + ".>"}, DeliverPolicy: jetstream.DeliverNewPolicy}
	if from := d.replayFrom(); from > 0 {
		// What the adopted jobs' workers sent after the journal's last
		// record of them: read again, taken once.
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := c.JS.OrderedConsumer(ctx, EventsStream, cc)
	if err != nil {
		return nil, fmt.Errorf("fleet: events consumer: %w", err)
	}
	if d.cc, err = cons.Consume(d.onEvent); err != nil {
		return nil, fmt.Errorf("fleet: consume events: %w", err)
	}
	if d.sub, err = c.NC.Subscribe(bundleSubject(d.runTok), d.onBundleRequest); err != nil {
		d.cc.Stop()
		return nil, fmt.Errorf("fleet: bundle requests: %w", err)
	}
	// The run's presence: workers drop the jobs of a run whose
	// orchestrator is gone (killed and not resumed), rather than spend an
	// agent on them.
	if _, err := c.Runs.Put(ctx, runKey(o.Run), []byte(strconv.FormatInt(d.gen, 10))); err != nil {
		d.Close()
		return nil, fmt.Errorf("fleet: record the run's presence: %w", err)
	}
	if len(d.orphans) > 0 {
		d.adoptEnd = time.AfterFunc(d.runTTL, func() { d.cancelOrphans("") })
	}
	var bctx context.Context
	bctx, d.stopBeat = context.WithCancel(d.base)
	d.beatDone = make(chan struct{})
	go func() { // lives until Close
		defer close(d.beatDone)
		t := time.NewTicker(presenceEvery)
		defer t.Stop()
		for {
			select {
			case <-bctx.Done():
				return
			case <-t.C:
				_, _ = c.Runs.Put(bctx, runKey(o.Run), []byte(strconv.FormatInt(d.gen, 10)))
			}
		}
	}()
	return d, nil
}

// newGeneration records the run's next generation: the jobs of earlier
// ones that no lease holds are dropped by workers.
func (d *Dispatcher) newGeneration(ctx context.Context) error {
	var gen int64
	if e, err := d.conn.Leases.Get(ctx, genKey(d.run)); err == nil {
		gen, _ = strconv.ParseInt(string(e.Value()), 10, 64)
	}
	d.gen = gen + 1
	if _, err := d.conn.Leases.Put(ctx, genKey(d.run), []byte(strconv.FormatInt(d.gen, 10))); err != nil {
		return fmt.Errorf("fleet: record the run's generation: %w", err)
	}
	return nil
}

// Close stops taking reports and bundle requests, cancels the jobs of an
// earlier generation nothing adopted, and says the run's orchestrator is
// gone.
func (d *Dispatcher) Close() {
	if d.adoptEnd != nil {
		d.adoptEnd.Stop()
	}
	d.cancelOrphans("")
	if d.stopBeat != nil {
		d.stopBeat()
		<-d.beatDone
		d.stopBeat = nil
		_ = d.conn.Runs.Purge(d.base, runKey(d.run))
	}
	if d.sub != nil {
		_ = d.sub.Unsubscribe()
	}
	if d.cc != nil {
		d.cc.Stop()
	}
	if c, ok := d.local.(io.Closer); ok {
		_ = c.Close() // its long-lived git helpers
	}
}

func (d *Dispatcher) onEvent(m jetstream.Msg) {
	var r Report
	if json.Unmarshal(m.Data(), &r) != nil {
		return
	}
	// muster.ev.<run>.<worker>.<job>: the server let only <worker>'s
	// credentials publish there.
	r.subject = m.Subject()
	if t := strings.Split(r.subject, "."); len(t) == 5 {
		r.sender = t[3]
	}
	if meta, err := m.Metadata(); err == nil {
		r.streamSeq = meta.Sequence.Stream
	}
	d.mu.Lock()
	p := d.jobs[r.Job]
	if p == nil {
		d.hold(r) // an orphan's is kept until adopted
	}
	d.mu.Unlock()
	if p == nil {
		return // a job of another generation or already ended: dropped
	}
	select {
	case p.ch <- r:
	case <-p.done: // ended meanwhile: a late report cannot stall the others
	}
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// wait takes the job's reports until its result, watching for a job
// lost from the queue.
func (d *Dispatcher) wait(ctx context.Context, req *muster.ExecRequest, p *pending, emit func(muster.Record)) (*muster.ExecResult, error) {
	watch := time.NewTicker(d.lease)
	defer watch.Stop()
	for {
		select {
		case <-ctx.Done():
			_, _ = d.conn.Leases.Put(context.WithoutCancel(ctx), leaseKey(d.run, p.job.ID), []byte(LeaseCancel))
			return nil, ctx.Err()
		case <-watch.C:
			if time.Since(p.lastSeen) > 2*d.lease {
				d.rescue(ctx, p)
				p.lastSeen = time.Now()
			}
		case rep := <-p.ch:
			if done, res, err := d.report(ctx, req, p, &rep, emit); done {
				return res, err
			}
		}
	}
}

// maxRefused bounds the Refused records of one invocation.
const maxRefused = 16

// refuse records a refused report: the task is neither failed nor charged.
func (p *pending) refuse(rep *Report, emit func(muster.Record), why string) {
	if p.refused >= maxRefused {
		return
	}
	p.refused++
	emit(muster.Record{Type: muster.RecRefused, Worker: rep.sender, Text: rep.subject, Tool: string(rep.Kind) + ": " + why})
}

// report takes one report of the job; done says the invocation ended.
func (d *Dispatcher) report(ctx context.Context, req *muster.ExecRequest, p *pending, rep *Report, emit func(muster.Record)) (bool, *muster.ExecResult, error) {
	bg := context.WithoutCancel(ctx)
	job := p.job
	if rep.sender != rep.Worker {
		p.refuse(rep, emit, fmt.Sprintf("it names worker %q but came from %q", rep.Worker, rep.sender))
		return false, nil, nil
	}
	if rep.Task != job.Task.ID || rep.Attempt != job.Attempt {
		p.refuse(rep, emit, "it names another task or attempt than its job's")
		return false, nil, nil
	}
	if job.Nonce != "" && subtle.ConstantTimeCompare([]byte(rep.Nonce), []byte(job.Nonce)) != 1 {
		p.refuse(rep, emit, "it does not carry the job's nonce: its sender never received the job")
		return false, nil, nil
	}
	who := rep.holder()
	switch rep.Kind {
	case RepClaim:
		if who == p.holder {
			p.lastSeen = time.Now() // the holder's own claim again (an adopted job's)
			return false, nil, nil
		}
		if why := p.claimRefused(rep, d.lease); why != "" {
			p.refuse(rep, emit, why)
			return false, nil, nil
		}
		p.holder, p.lastSeen = who, time.Now()
		d.keep(job, rep.Clone)
		_, _ = d.conn.Leases.Put(bg, leaseKey(d.run, job.ID), []byte(who))
		emit(muster.Record{Type: muster.RecWorker, Worker: rep.Worker, WorkerClone: rep.Clone, FleetSeq: rep.streamSeq})
	case RepAlive:
		if who == p.holder {
			p.lastSeen = time.Now()
		}
	case RepRecord:
		if who != p.holder || rep.Record == nil {
			return false, nil, nil // a superseded lease's records: dropped
		}
		p.lastSeen = time.Now()
		key := who + "#" + strconv.Itoa(rep.Seq)
		if p.seen[key] {
			return false, nil, nil // a redelivered report: counted once
		}
		p.seen[key] = true
		switch rep.Record.Type {
		case muster.RecPID, muster.RecWorker, muster.RecRefused:
			return false, nil, nil // another host's processes are none of ours
		}
		rc := *rep.Record
		rc.FleetSeq = rep.streamSeq
		emit(rc)
	case RepChunk:
		if who == p.holder {
			p.lastSeen = time.Now()
			d.chunk(p, who, rep)
		}
	case RepHandback:
		if who == p.holder {
			p.holder = ""
			p.lastSeen = time.Now()
		}
	case RepResult:
		if who != p.holder {
			p.refuse(rep, emit, "not from the lease the orchestrator accepted ("+cmp.Or(p.holder, "none")+")")
			return false, nil, nil
		}
		res, err := d.accept(ctx, req, p, rep)
		if ctx.Err() != nil {
			return true, nil, ctx.Err()
		}
		_, _ = d.conn.Leases.Put(bg, leaseKey(d.run, job.ID), []byte(LeaseDone))
		if err == nil && req.Role == muster.RoleCoder {
			d.mu.Lock()
			d.producer[job.Task.ID] = rep.Worker
			d.mu.Unlock()
		}
		return true, res, err
	}
	return false, nil, nil
}

// claimRefused says why a claim cannot take the job's lease ("": it
// can). A claim must be of a delivery of the job's own message, by a
// worker the job allows, and newer than the holder's; it takes the lease
// from a holder only once that holder has been silent for most of a
// lease (a live holder's lease is not up for grabs: a delivery count is
// the claimant's word).
func (p *pending) claimRefused(rep *Report, lease time.Duration) string {
	switch {
	case rep.Msg != p.msgSeq || rep.Delivery == 0:
		return "not a delivery of the job's message"
	case slices.Contains(p.job.NotOn, rep.Worker):
		return "the job may not run on " + rep.Worker + " (it made the change under review)"
	case p.holder == "":
		return ""
	case !newer(*rep, p.holder):
		return "an older lease than " + p.holder + "'s"
	case time.Since(p.lastSeen) < lease*3/4:
		return "the lease of " + p.holder + " is alive"
	}
	return ""
}

// newer reports whether a claim's lease comes after the holder's.
func newer(r Report, holder string) bool { return epochAfter(r.holder(), holder) }

func (d *Dispatcher) publish(ctx context.Context, p *pending) error {
	data, err := json.Marshal(p.job)
	if err != nil {
		return err
	}
	ack, err := d.conn.JS.Publish(ctx, taskSubject(d.runTok, p.job.Executor), data, jetstream.WithMsgID(p.job.ID+"."+strconv.FormatUint(p.msgSeq, 10)))
	if err != nil {
		return fmt.Errorf("fleet: send the task: %w", err)
	}
	p.msgSeq = ack.Sequence
	return nil
}

// rescue sends a job again whose message is gone from the work queue
// while no lease holds it: its redeliveries ran out, or a late ack of an
// expired lease removed it (nats-server#4786).
func (d *Dispatcher) rescue(ctx context.Context, p *pending) {
	if p.holder != "" && d.holderAlive(ctx, p) {
		return
	}
	st, err := d.conn.JS.Stream(ctx, TasksStream)
	if err != nil {
		return
	}
	if _, err := st.GetMsg(ctx, p.msgSeq); !errors.Is(err, jetstream.ErrMsgNotFound) {
		return // still queued (or we cannot tell): JetStream redelivers it
	}
	_ = d.publish(ctx, p)
}

// servedElsewhere reports whether a registered worker other than not
// serves executor.
func (d *Dispatcher) servedElsewhere(ctx context.Context, executor, not string) bool {
	ws, err := d.conn.ListWorkers(ctx)
	if err != nil {
		return true // cannot tell: the queue waits for one
	}
	for _, w := range ws {
		for _, e := range w.Executors {
			if w.Name != not && e.Name == executor && !w.Stopping {
				return true
			}
		}
	}
	return false
}

// holderAlive reports whether the lease holder's worker is registered
// and says it does the job.
func (d *Dispatcher) holderAlive(ctx context.Context, p *pending) bool {
	name, _, _ := strings.Cut(p.holder, "/")
	e, err := d.conn.Workers.Get(ctx, name)
	if err != nil {
		return false
	}
	var r Registration
	if json.Unmarshal(e.Value(), &r) != nil {
		return false
	}
	for _, ex := range r.Executors {
		for _, dg := range ex.Doing {
			if dg.Run == d.run && dg.Task == p.job.Task.ID && dg.Attempt == p.job.Attempt {
				return true
			}
		}
	}
	return false
}

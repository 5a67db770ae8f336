package driver

import (
	"sync"

	"github.com/muster-run/muster"
)

// Joined is an executor that joins a running run's crew: a fleet worker
// registered mid-run with an executor name the run did not know
// (Options.Joins). Exec is its adapter.
type Joined struct {
	Spec   *muster.ExecutorSpec
	Worker string
	Exec   muster.Executor
}

// crew is the adapters of the executors that joined mid-run, beside
// Options.Executors (which the driver never changes): the loop adds,
// workers read.
type crew struct {
	mu     sync.RWMutex
	execs  map[string]muster.Executor
	specs  map[string]*muster.ExecutorSpec
	warned string // the last Decision.Waiting said (loop only)
}

// executor returns the adapter of an executor, of the run's start or
// joined since; nil when the run has none of that name.
func (d *Driver) executor(name string) muster.Executor {
	if e := d.opts.Executors[name]; e != nil {
		return e
	}
	d.crew.mu.RLock()
	defer d.crew.mu.RUnlock()
	return d.crew.execs[name]
}

// spec returns an executor's spec from cfg (the config an attempt
// started with), else from the executors that joined since.
func (d *Driver) spec(cfg *muster.Config, name string) *muster.ExecutorSpec {
	if s := cfg.Executor(name); s != nil {
		return s
	}
	d.crew.mu.RLock()
	defer d.crew.mu.RUnlock()
	return d.crew.specs[name]
}

// join adds an executor to the crew: its adapter first, then the
// ExecutorJoined that lets the engine lease it (synced with the next
// start, before any attempt runs there). A name the crew has already is
// ignored: a local executor keeps its name, as at the run's start.
func (d *Driver) join(j Joined) error {
	if j.Spec == nil || j.Exec == nil || j.Spec.Name == "" || d.state.Config == nil || d.state.Config.Executor(j.Spec.Name) != nil || d.opts.Executors[j.Spec.Name] != nil {
		return nil
	}
	// What a worker registers, and nothing else: no secret reaches the
	// journal through a spec.
	spec := &muster.ExecutorSpec{Name: j.Spec.Name, Kind: j.Spec.Kind, Clones: min(max(j.Spec.Clones, 1), muster.MaxClones),
		Roles: append([]muster.Role(nil), j.Spec.Roles...), Fleet: true}
	d.crew.mu.Lock()
	if d.crew.execs == nil {
		d.crew.execs, d.crew.specs = map[string]muster.Executor{}, map[string]*muster.ExecutorSpec{}
	}
	d.crew.execs[spec.Name], d.crew.specs[spec.Name] = j.Exec, spec
	d.crew.mu.Unlock()
	return d.emit(muster.Event{Type: muster.EvExecutorJoined, Executor: spec.Name, Worker: j.Worker, Spec: spec})
}

// waiting says once, as a Warning, what the run waits for while nothing
// runs (engine.Decision.Waiting): a fleet worker to join.
func (d *Driver) waiting(msg string) error {
	if msg == "" || msg == d.crew.warned {
		return nil
	}
	d.crew.warned = msg
	return d.emit(muster.Event{Type: muster.EvWarning, Message: msg})
}
